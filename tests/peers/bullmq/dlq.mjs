// dlq.mjs: drives BullMQ itself (from npm, on Node 22) for tests/integration/dlq_bullmq.sh, as
// one process for the whole test (Node starts slowly): it reads commands from stdin, one a line,
// and answers each on stdout when done.
//   fail QUEUE ID:ATTEMPTS[:PRIORITY]...  adds a job per ID (jobId ID, name "charge", data
//                              {order: ID}) with that many attempts (and priority), runs a Worker until every one has failed
//                              (the provider is down: the processor throws), closes it: "failed QUEUE ID:ATTEMPTS..."
//   work QUEUE                 starts a Worker on QUEUE and keeps it: "working QUEUE". Its jobs
//                              fail while the Redis key bqdlq:phase is not "fixed"; otherwise each
//                              run is recorded (SADD bqdlq:ran ID, INCR bqdlq:runs). Its drainDelay
//                              is 300 s: idle, it wakes up only on the queue's marker.
//   stop                       closes every Worker: "stopped"
//   node dlq.mjs PORT PASSWORD
import { Redis } from "ioredis";
import { Queue, Worker } from "bullmq";
import readline from "node:readline";

const [port, password] = process.argv.slice(2);
const connection = { host: "127.0.0.1", port: Number(port), password, maxRetriesPerRequest: null };
const redis = new Redis(connection);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const workers = [];

async function until(what, fn) {
  for (let i = 0; i < 1200; i++) {
    if (await fn()) return;
    await sleep(25);
  }
  throw new Error(`dlq.mjs: timed out waiting for ${what}`);
}

async function processor(job) {
  if ((await redis.get("bqdlq:phase")) !== "fixed") throw new Error("the provider said no");
  await redis.multi().sadd("bqdlq:ran", job.id).incr("bqdlq:runs").exec();
}

const worker = (queue) => new Worker(queue, processor, { connection, drainDelay: 300 });

async function fail(queue, jobs) {
  const q = new Queue(queue, { connection });
  for (const j of jobs) {
    const [id, attempts, priority] = j.split(":");
    const opts = { jobId: id, attempts: Number(attempts) };
    if (priority) opts.priority = Number(priority);
    await q.add("charge", { order: id }, opts);
  }
  const w = worker(queue);
  const ids = jobs.map((j) => j.split(":")[0]);
  await until(`${queue}'s failures`, async () => {
    const states = await Promise.all(ids.map((id) => q.getJobState(id)));
    return states.every((s) => s === "failed");
  });
  await w.close();
  await q.close();
}

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  const [cmd, queue, ...rest] = line.trim().split(/\s+/);
  if (cmd === "fail") {
    await fail(queue, rest);
    console.log(`failed ${queue} ${rest.join(" ")}`);
  } else if (cmd === "work") {
    const w = worker(queue);
    await w.waitUntilReady();
    workers.push(w);
    console.log(`working ${queue}`);
  } else if (cmd === "stop") {
    await Promise.all(workers.splice(0).map((w) => w.close()));
    console.log("stopped");
  } else if (cmd) {
    console.error(`dlq.mjs: unknown command ${cmd}`);
    process.exit(2);
  }
}
await Promise.all(workers.map((w) => w.close()));
redis.disconnect();
process.exit(0);
