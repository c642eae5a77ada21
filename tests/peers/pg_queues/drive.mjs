// drive.mjs CONNSTRING READY_FILE: puts real job runners into a known state through their own
// APIs (never an INSERT of ours), keeps its workers alive, writes READY_FILE when the state is
// reached and waits to be killed. tests/integration/postgres_queues.sh scrapes and asserts.
//
// pg-boss 12 (schema pgboss): queue billing (dead_letter billing_dlq, 2 retries of 5 s with
//   backoff capped at 7 s, expire 60 s): 4 jobs finished with durations 0.2, 0.4, 0.6, 0.8 s,
//   1 failed for good (copied to billing_dlq by pg-boss), 1 held (fetched by this process),
//   2 ready, 1 scheduled an hour ahead. Queue plain (no dead-letter queue): 1 failed for good.
//   Queue beat (heartbeat 10 s): 1 job held by a live worker that beats.
// pg-boss 9, 10 and 11 (schemas pgboss9, pgboss10, pgboss11): queue jobsN: 1 finished after
//   0.3 s, 1 failed for good, 1 held, 1 ready.
// pg-boss 2.5.2 (schema pgboss2): migrations and one job: a layout older than the preset reads.
// graphile-worker 0.18 (schema graphile_worker): a job failed for good (no queue), one finished
//   (graphile-worker deletes it), in queue mail 1 held by the live worker, 1 ready (a task no
//   worker runs), 1 scheduled an hour ahead.
//
// drive.mjs CONNSTRING READY_FILE SKEW_SECONDS: instead, a host whose clock runs SKEW_SECONDS
// fast (this process's Date made so: a separate process, as the clock is process-wide): its
// graphile-worker 0.18 runs with useNodeTime in schema graphile_fast, and in queue fast 1 job is
// held by its live worker, locked at that clock's time.
import { createRequire } from "node:module";
import { writeFileSync } from "node:fs";
import { PgBoss } from "pg-boss";
import { makeWorkerUtils, run } from "graphile-worker";

const require = createRequire(import.meta.url);
const [conn, readyFile, skew] = process.argv.slice(2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const forever = new Promise(() => {});

async function boss12() {
  const boss = new PgBoss({ connectionString: conn, schema: "pgboss", supervise: false, schedule: false });
  boss.on("error", (e) => console.error("pg-boss 12:", e));
  await boss.start();
  await boss.createQueue("billing_dlq");
  await boss.createQueue("billing", {
    deadLetter: "billing_dlq", retryLimit: 2, retryDelay: 5, retryBackoff: true, retryDelayMax: 7,
    expireInSeconds: 60,
  });
  await boss.createQueue("plain", { retryLimit: 0 });
  await boss.createQueue("beat", { heartbeatSeconds: 10, expireInSeconds: 600 });
  for (let i = 0; i < 4; i++) await boss.send("billing", { i });
  const done = await boss.fetch("billing", { batchSize: 4 });
  const t0 = Date.now(); // started_on is the fetch's transaction time, just before this
  if (done.length !== 4) throw new Error(`fetched ${done.length} jobs, want 4`);
  for (const [i, j] of done.entries()) {
    await sleep(t0 + 200 * (i + 1) - Date.now());
    await boss.complete("billing", j.id);
  }
  await boss.send("billing", { dead: true }, { retryLimit: 0 });
  const [f] = await boss.fetch("billing");
  await boss.fail("billing", f.id, { error: "boom" });
  await boss.send("plain", {});
  const [p] = await boss.fetch("plain");
  await boss.fail("plain", p.id, { error: "boom" });
  await boss.send("billing", { held: true });
  const [h] = await boss.fetch("billing");
  if (!h) throw new Error("nothing to hold");
  await boss.send("billing", {});
  await boss.send("billing", {});
  await boss.send("billing", {}, { startAfter: 3600 });
  let started;
  const working = new Promise((r) => (started = r));
  await boss.work("beat", { pollingIntervalSeconds: 0.5 }, async () => {
    started();
    await forever;
  });
  await boss.send("beat", {});
  await working;
}

// pg-boss 9, 10, 11: the same small state through each one's API (9 completes by id alone).
async function bossOld(PgBossN, n) {
  const boss = new PgBossN({ connectionString: conn, schema: `pgboss${n}`, supervise: false, schedule: false });
  boss.on("error", (e) => console.error(`pg-boss ${n}:`, e));
  await boss.start();
  const q = `jobs${n}`;
  if (n >= 10) await boss.createQueue(q, { retryLimit: 0 });
  const ids = async () => (await boss.fetch(q, n >= 10 ? { batchSize: 1 } : 1)).map((j) => j.id);
  const settle = (verb, id) => (n >= 10 ? boss[verb](q, id) : boss[verb](id));
  await boss.send(q, {}, { retryLimit: 0 });
  const [d] = await ids();
  await sleep(300); // the handler's 0.3 s
  await settle("complete", d);
  await boss.send(q, {}, { retryLimit: 0 });
  const [f] = await ids();
  await settle("fail", f);
  await boss.send(q, {}, { retryLimit: 0 });
  await ids(); // held by this process
  await boss.send(q, {}, { retryLimit: 0 });
}

async function boss2() {
  const PgBoss2 = require("pg-boss-2");
  const boss = new PgBoss2({ connectionString: conn, schema: "pgboss2" });
  await boss.start();
  await boss.publish("old", {});
  await boss.stop();
}

async function graphile() {
  const utils = await makeWorkerUtils({ connectionString: conn });
  await utils.migrate();
  let started;
  const working = new Promise((r) => (started = r));
  await run({
    connectionString: conn, concurrency: 2, noHandleSignals: true, pollInterval: 100,
    logger: undefined,
    taskList: {
      hang: async () => { started(); await forever; },
      boom: async () => { throw new Error("boom"); },
      quick: async () => {},
    },
  });
  const boom = await utils.addJob("boom", {}, { maxAttempts: 1 });
  await utils.addJob("quick", {});
  // until boom has failed its only attempt and quick is gone
  for (let i = 0; ; i++) {
    const r = await utils.withPgClient((c) => c.query(
      "SELECT (SELECT attempts FROM graphile_worker._private_jobs WHERE id = $1 AND locked_at IS NULL) AS a, " +
      "(SELECT count(*) FROM graphile_worker._private_jobs) AS n", [boom.id]));
    if (r.rows[0].a === 1 && Number(r.rows[0].n) === 1) break;
    if (i > 600) throw new Error("graphile-worker did not run boom and quick in 30 s");
    await sleep(50);
  }
  await utils.addJob("hang", {}, { queueName: "mail" });
  await working;
  await utils.addJob("send", {}, { queueName: "mail" });
  await utils.addJob("send", {}, { queueName: "mail", runAt: new Date(Date.now() + 3600e3) });
  await utils.release();
}

// The fast host: Date (without arguments) and Date.now() run seconds ahead; graphile-worker's
// useNodeTime sends that time for run_at and locked_at instead of using the database's now().
async function graphileFast(seconds) {
  const RealDate = Date;
  const ahead = () => RealDate.now() + seconds * 1000;
  globalThis.Date = class extends RealDate {
    constructor(...a) { super(...(a.length ? a : [ahead()])); }
    static now() { return ahead(); }
  };
  const opts = { connectionString: conn, schema: "graphile_fast", useNodeTime: true };
  const utils = await makeWorkerUtils(opts);
  await utils.migrate();
  let started;
  const working = new Promise((r) => (started = r));
  await run({
    ...opts, concurrency: 1, noHandleSignals: true, pollInterval: 100, logger: undefined,
    taskList: { hang: async () => { started(); await forever; } },
  });
  await utils.addJob("hang", {}, { queueName: "fast" });
  await working;
  await utils.release();
}

try {
  await Promise.all(skew ? [graphileFast(Number(skew))] : [
    boss12(),
    bossOld(require("pg-boss-9"), 9),
    bossOld(require("pg-boss-10"), 10),
    bossOld(require("pg-boss-11"), 11),
    boss2(),
    graphile(),
  ]);
  writeFileSync(readyFile, "ready\n");
} catch (e) {
  console.error(e);
  process.exit(1);
}
process.on("SIGTERM", () => process.exit(0));
await forever;
