// bull.mjs: drives BullMQ itself (from npm, on Node 22) for tests/integration/bullmq.sh, the way
// applications use it: Queue.add to produce, Worker to process.
//   node bull.mjs PORT PASSWORD setup          the scenario of the test, then keeps a worker
//                                              holding one job until killed (prints "ready")
//   node bull.mjs PORT PASSWORD stall QUEUE    a job whose worker blocks its event loop for 5 s,
//                                              past its lock (1 s): start the checker meanwhile
//   node bull.mjs PORT PASSWORD checker QUEUE  a worker that checks for stalled jobs often
//   node bull.mjs PORT PASSWORD spread PREFIX N  one waiting job in each queue PREFIX1..PREFIXN
//   node bull.mjs PORT PASSWORD flow QUEUE     two Workers (one named billing) with the metrics
//                                              option: four jobs completed (one after a failed
//                                              attempt) and one failed for good; prints BullMQ's
//                                              own figures as "flow QUEUE completed=C failed=F
//                                              workers=W", then "ready", and runs until killed
//   node bull.mjs PORT PASSWORD workers QUEUE  BullMQ's own Queue.getWorkersCount()
//   node bull.mjs PORT "" cluster              on the Redis Cluster a seed of which is PORT,
//                                              through ioredis's Cluster: the queues of
//                                              redis_cluster.sh, then their counts as BullMQ
//                                              reads them, and the failed jobs of qrel dlq's
//                                              queues {charges} and {refunds} (prefix dq);
//                                              keeps a worker holding one job
import { Cluster } from "ioredis";
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
} else if (cmd === "flow") {
  const q = new Queue(args[0], { connection });
  const metrics = { maxDataPoints: 60 }; // a point a minute for an hour: the count is kept whole
  const handler = async (job) => {
    if (job.data.fail || (job.data.once && job.attemptsMade === 0)) throw new Error("no");
  };
  const workers = [new Worker(args[0], handler, { connection, metrics }),
    new Worker(args[0], handler, { connection, metrics, name: "billing" })];
  for (let i = 0; i < 3; i++) await q.add("post", {});
  await q.add("post", { once: true }, { attempts: 2 }); // fails once, then completes
  await q.add("post", { fail: true }, { attempts: 1 }); // failed for good
  const count = async (type) => (await q.getMetrics(type)).meta.count;
  await until("the jobs to finish", async () => (await count("completed")) === 4 &&
    (await count("failed")) === 1);
  console.log(`flow ${args[0]} completed=${await count("completed")} ` +
    `failed=${await count("failed")} workers=${await q.getWorkersCount()}`);
  console.log("ready");
  await sleep(3600_000);
  for (const w of workers) await w.close();
} else if (cmd === "workers") {
  const q = new Queue(args[0], { connection });
  console.log(await q.getWorkersCount());
  await q.close();
} else if (cmd === "spread") {
  for (let i = 1; i <= Number(args[1]); i++) {
    const q = new Queue(`${args[0]}${i}`, { connection });
    await q.add("job", {});
    await q.close();
  }
} else if (cmd === "cluster") {
  // BullMQ on a cluster wants every key of a queue in one slot: the hash-tagged prefix {bull}
  // (all its queues in one slot), and under the prefix bull queues with hash-tagged names, whose
  // slots (a 15495, b 3300, c 7365) fall to the three masters of redis-cli --cluster create.
  const conn = new Cluster([{ host: "127.0.0.1", port: Number(port) }], {
    redisOptions: { maxRetriesPerRequest: null },
  });
  const sets = [
    { prefix: "{bull}", names: ["mail", "pay"] },
    { prefix: "bull", names: ["{a}", "{b}", "{c}"] },
  ];
  // A job held by a live worker (active) until the process is killed; the worker takes one job
  // at a time, so the jobs added after it stay waiting.
  let held;
  const hold = async (q, prefix) => {
    await q.add("send", { hang: true });
    let holding = false;
    held = new Worker(q.name, async () => {
      holding = true;
      await sleep(3600_000);
    }, { connection: conn, prefix, concurrency: 1 });
    await until("the held job", async () => holding);
  };
  const queues = [];
  for (const { prefix, names } of sets)
    for (const [i, name] of names.entries()) queues.push({ q: new Queue(name, { connection: conn, prefix }), prefix, i });
  // Per queue: i + 1 jobs failed for good, one completed, one retried an hour later (delayed),
  // then i + 2 waiting and one scheduled ahead. A worker runs until the failures are in.
  for (const { q, prefix, i } of queues) {
    for (let k = 0; k <= i; k++) await q.add("send", { fail: true }, { attempts: 1 });
    await q.add("send", {});
    await q.add("send", { fail: true }, { attempts: 3, backoff: { type: "fixed", delay: 3600_000 } });
    const w = new Worker(q.name, async (job) => {
      if (job.data.fail) throw new Error("the provider said no");
    }, { connection: conn, prefix });
    await until(`${q.name}'s failures`, async () => {
      const c = await q.getJobCounts("failed", "completed", "delayed");
      return c.failed === i + 1 && c.completed === 1 && c.delayed === 1;
    });
    await w.close();
    if (q.name === "mail") await hold(q, prefix); // one job active, before the waiting ones
    for (let k = 0; k < i + 2; k++) await q.add("send", {});
    await q.add("send", {}, { delay: 3600_000 });
  }
  for (const { q, prefix } of queues) {
    const c = await q.getJobCounts("wait", "paused", "prioritized", "active", "delayed", "failed");
    console.log(`counts ${prefix} ${q.name} ready=${c.wait + c.paused + c.prioritized} ` +
      `in_flight=${c.active} delayed=${c.delayed} failed=${c.failed}`);
  }
  // qrel dlq's queues {charges} (slot 386) and {refunds} (7042) under the prefix dq, which no
  // bullmq source of the test reads: jobs added with the order as job id and data {order},
  // failed for good by a Worker.
  const dlqs = { "{charges}": ["c1", "c2", "c3", "c4"], "{refunds}": ["r1", "r2"] };
  for (const [name, orders] of Object.entries(dlqs)) {
    const dq = new Queue(name, { connection: conn, prefix: "dq" });
    for (const id of orders) await dq.add("charge", { order: id }, { jobId: id, attempts: 1 });
    const dw = new Worker(name, async () => {
      throw new Error("the provider said no");
    }, { connection: conn, prefix: "dq" });
    await until(`${name}'s failures`, async () => (await dq.getFailedCount()) === orders.length);
    await dw.close();
    console.log(`dlq dq ${name} failed=${await dq.getFailedCount()}`);
  }
  console.log("ready");
  await sleep(3600_000);
  await held.close();
} else {
  console.error(`bull.mjs: unknown command ${cmd}`);
  process.exit(2);
}
process.exit(0);
