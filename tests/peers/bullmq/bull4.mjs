// bull4.mjs: drives Bull 4 (npm `bull`, BullMQ's predecessor, pinned in package-lock.json) for
// tests/integration/bullmq.sh, the way applications use it: Queue#add to produce and
// Queue#process to work. Bull keeps BullMQ's layout without a `meta` key, so a source without
// `queues:` finds its queues only by the job counter `id`.
//   node bull4.mjs PORT PASSWORD setup QUEUE   a job failed for good, a job held by the worker,
//                                              two waiting, two prioritized (Bull keeps those in
//                                              `wait` and in the `priority` set), one delayed;
//                                              prints Bull's own getJobCounts() as a `counts`
//                                              line, then "ready", and holds the job until killed
import Bull from "bull";

const [port, password, cmd, name] = process.argv.slice(2);
const redis = { host: "127.0.0.1", port: Number(port), password };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(what, fn) {
  for (let i = 0; i < 400; i++) {
    if (await fn()) return;
    await sleep(25);
  }
  throw new Error(`bull4.mjs: timed out waiting for ${what}`);
}

if (cmd === "setup") {
  const q = new Bull(name, { redis });
  await q.add({ fail: true }, { attempts: 1 });
  await q.add({ hang: true });
  let holding = false;
  // One job at a time: the held one blocks the rest, which stay where they were added.
  q.process(1, async (job) => {
    if (job.data.fail) throw new Error("the provider said no");
    holding = true;
    await sleep(3600_000);
  });
  await until("the failed job", async () => (await q.getFailedCount()) === 1);
  await until("the held job", async () => holding);
  await q.add({});
  await q.add({});
  await q.add({}, { priority: 1 });
  await q.add({}, { priority: 5 });
  await q.add({}, { delay: 3600_000 });
  const c = await q.getJobCounts();
  const prioritized = await q.client.zcard(q.toKey("priority"));
  console.log(`counts ${name} ready=${c.waiting + c.paused} in_flight=${c.active} ` +
    `delayed=${c.delayed} failed=${c.failed} priority=${prioritized}`);
  console.log("ready");
  await sleep(3600_000);
} else {
  console.error(`bull4.mjs: unknown command ${cmd}`);
  process.exit(2);
}
process.exit(0);
