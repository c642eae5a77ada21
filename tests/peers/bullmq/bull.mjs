// bull.mjs: drives BullMQ itself (from npm, on Node 22) for tests/integration/bullmq.sh, the way
// applications use it: Queue.add to produce, Worker to process.
//   node bull.mjs PORT PASSWORD setup          the scenario of the test, then keeps a worker
//                                              holding one job until killed (prints "ready")
//   node bull.mjs PORT PASSWORD stall QUEUE    a job whose worker blocks its event loop for 5 s,
//                                              past its lock (1 s): start the checker meanwhile
//   node bull.mjs PORT PASSWORD checker QUEUE  a worker that checks for stalled jobs often
//   node bull.mjs PORT PASSWORD spread PREFIX N  one waiting job in each queue PREFIX1..PREFIXN
import { Queue, Worker } from "bullmq";

const [port, password, cmd, ...args] = process.argv.slice(2);
const connection = { host: "127.0.0.1", port: Number(port), password, maxRetriesPerRequest: null };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(what, fn) {
  for (let i = 0; i < 400; i++) {
    if (await fn()) return;
    await sleep(25);
  }
  throw new Error(`bull.mjs: timed out waiting for ${what}`);
}

if (cmd === "setup") {
  const q = new Queue("email", { connection });
  // Given up for good: one attempt.
  await q.add("send", { fail: true }, { attempts: 1 });
  // Failed once, retried an hour later: waits in delayed.
  await q.add("send", { fail: true }, { attempts: 3, backoff: { type: "fixed", delay: 3600_000 } });
  // Held by the worker until the process is killed.
  await q.add("send", { hang: true });
  let holding = false;
  const w = new Worker("email", async (job) => {
    if (job.data.fail) throw new Error("the provider said no");
    if (job.data.hang) {
      holding = true;
      await sleep(3600_000);
    }
  }, { connection, concurrency: 1 });
  await until("the failed job", async () => (await q.getFailedCount()) === 1);
  await until("the retry", async () => (await q.getDelayedCount()) === 1);
  await until("the held job", async () => holding);
  await q.add("send", {});
  await q.add("send", {});
  await q.add("send", {}, { delay: 3600_000 });
  console.log("ready");
  await sleep(3600_000);
  await w.close();
} else if (cmd === "checker") {
  const w = new Worker(args[0], async () => {}, { connection, stalledInterval: 300, lockDuration: 1000 });
  console.log("ready");
  await sleep(3600_000);
  await w.close();
} else if (cmd === "stall") {
  const q = new Queue(args[0], { connection });
  await q.add("cpu", {});
  let started = false;
  const w = new Worker(args[0], async () => {
    started = true;
    const end = Date.now() + 5000;
    while (Date.now() < end); // a handler that blocks the event loop: the lock is not renewed
  }, { connection, lockDuration: 1000, skipStalledCheck: true });
  await until("the job to start", async () => started);
  await w.close(true);
  await q.close();
} else if (cmd === "spread") {
  for (let i = 1; i <= Number(args[1]); i++) {
    const q = new Queue(`${args[0]}${i}`, { connection });
    await q.add("job", {});
    await q.close();
  }
} else {
  console.error(`bull.mjs: unknown command ${cmd}`);
  process.exit(2);
}
process.exit(0);
