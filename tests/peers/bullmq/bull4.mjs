// bull4.mjs: drives Bull 4 (npm `bull`, BullMQ's predecessor, pinned in package-lock.json) for
// tests/integration/bullmq.sh, the way applications use it: Queue#add to produce and
// Queue#process to work. Bull keeps BullMQ's layout without a `meta` key, so a source without
// `queues:` finds its queues only by the job counter `id`.
//   node bull4.mjs PORT PASSWORD setup QUEUE   a job failed for good, a job held by the worker,
//                                              two waiting, two prioritized (Bull keeps those in
//                                              `wait` and in the `priority` set), one delayed;
//                                              prints Bull's own getJobCounts() as a `counts`
//                                              line, its getWorkers() and getMetrics() counts as
//                                              "flow QUEUE completed=C failed=F workers=W" (with
//                                              the metrics option), then "ready", and holds the
//                                              job until killed
//   node bull4.mjs PORT "" cluster QUEUE       on the Redis Cluster a seed of which is PORT, under
//                                              the hash-tagged prefix {legacy}: a job failed for
//                                              good, two waiting, one prioritized, one delayed;
//                                              prints the `counts` line and "ready", then exits
import Bull from "bull";
import { Cluster } from "ioredis";

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
  const q = new Bull(name, { redis, metrics: { maxDataPoints: 60 } });
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
  const count = async (type) => (await q.getMetrics(type)).meta.count;
  console.log(`flow ${name} completed=${await count("completed")} failed=${await count("failed")} ` +
    `workers=${(await q.getWorkers()).length}`);
  console.log("ready");
  await sleep(3600_000);
} else if (cmd === "cluster") {
  // Bull on a cluster as its docs say: a client per role from createClient, and a hash-tagged
  // prefix so that every key of a queue is in one slot. The blocking and subscriber clients may
  // not retry per request or check readiness (Bull refuses them otherwise).
  const createClient = () => new Cluster([{ host: "127.0.0.1", port: Number(port) }], {
    enableReadyCheck: false,
    redisOptions: { maxRetriesPerRequest: null, enableReadyCheck: false },
  });
  const opts = { prefix: "{legacy}", createClient };
  const q = new Bull(name, opts);
  await q.add({ fail: true }, { attempts: 1 });
  const worker = new Bull(name, opts);
  worker.process(async () => { throw new Error("the provider said no"); });
  await until("the failed job", async () => (await q.getFailedCount()) === 1);
  await worker.close();
  await q.add({});
  await q.add({});
  await q.add({}, { priority: 2 });
  await q.add({}, { delay: 3600_000 });
  const c = await q.getJobCounts();
  console.log(`counts ${name} ready=${c.waiting + c.paused} in_flight=${c.active} ` +
    `delayed=${c.delayed} failed=${c.failed}`);
  console.log("ready");
  await q.close();
} else {
  console.error(`bull4.mjs: unknown command ${cmd}`);
  process.exit(2);
}
process.exit(0);
