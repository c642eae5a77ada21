// dlq_drive.mjs CONNSTRING READY_FILE: the real workers of tests/integration/dlq_pg_runners.sh,
// pg-boss 12 (schema pgboss) and graphile-worker 0.18 (schema graphile_worker) in one process (a
// Node process is expensive): it sends the jobs through each runner's API, its workers fail them
// for good, it writes READY_FILE once every one is dead, and its workers keep running, so that
// what qrel replays is run by them.
//
// Each job's data is {order, plan}. The handler, the same for both runners, by plan:
//   fail:  throws ("provider down") until the job carries qrel's replay stamp; then it records
//          the run in table runs and the order in the work table, and completes;
//   done:  records the order in the work table, then throws: dead after its work was done;
//   again: throws; once stamped it records the order in the work table and throws again: a job
//          that dies again after a replay, done by then, so that a second replay leaves it.
// pg-boss queue billing (dead_letter billing_dlq, no retry): b1-b6 fail, b7 b8 done, b9 again,
//   and one job without an order (fail).
// pg-boss queue solo (policy exclusive, no dead_letter, no retry): s1 (singletonKey k1) fail,
//   s2 (k2) again; once both are dead, a twin of s1 (k1) is sent to run in an hour, so that
//   pg-boss's unique index would refuse s1 back.
// graphile-worker queue mail (task order, max_attempts 1): g1-g4 fail, g5 done, g6 again.
// pg-boss 9.0.3, 10.4.2 and 11.1.2 (the npm aliases pg-boss-9/-10/-11, schemas pgboss9, pgboss10,
//   pgboss11), each with no retry: queue plainN (no dead-letter queue): Np1 fail, Np2 done, and in 9
//   also 9p3 (singletonKey k9) fail, whose twin (k9, to run in an hour) is sent once it is dead,
//   so that pg-boss 9's singletonKey index would refuse it back; 10 and 11 also queue billN with
//   deadLetter billN_dlq (no worker): Nb1 Nb2 fail, Nb3 done.
// Tables work (order_id text primary key, done_at timestamptz) and runs (order_id text, runner
// text) are the test's.
import { writeFileSync } from "node:fs";
import { PgBoss } from "pg-boss";
import PgBoss9 from "pg-boss-9";
import PgBoss10 from "pg-boss-10";
import PgBoss11 from "pg-boss-11";
import { makeWorkerUtils, run } from "graphile-worker";
import pg from "pg";

const [conn, readyFile] = process.argv.slice(2);
const STAMP = "qrel-replayed";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pool = new pg.Pool({ connectionString: conn, max: 4 });

async function handle(runner, data) {
  const order = data && data.order;
  const stamped = data && STAMP in data;
  const work = () => pool.query("INSERT INTO work VALUES ($1, now()) ON CONFLICT DO NOTHING", [order]);
  if (data.plan === "done") {
    await work();
    throw new Error("died after its work");
  }
  if (!stamped) throw new Error("provider down");
  if (data.plan === "again") {
    await work();
    throw new Error("died again after a replay");
  }
  await pool.query("INSERT INTO runs (order_id, runner) VALUES ($1, $2)", [order ?? "", runner]);
  if (order) await work();
}

async function count(sql) {
  return Number((await pool.query(sql)).rows[0].n);
}

async function boss() {
  const b = new PgBoss({ connectionString: conn, schema: "pgboss", supervise: false, schedule: false });
  b.on("error", (e) => console.error("pg-boss:", e));
  await b.start();
  await b.createQueue("billing_dlq");
  await b.createQueue("billing", { deadLetter: "billing_dlq", retryLimit: 0 });
  await b.createQueue("solo", { policy: "exclusive", retryLimit: 0 });
  const worker = async (jobs) => { for (const j of jobs) await handle("pg-boss", j.data); };
  await b.work("billing", { pollingIntervalSeconds: 0.5 }, worker);
  await b.work("solo", { pollingIntervalSeconds: 0.5 }, worker);
  for (let i = 1; i <= 6; i++) await b.send("billing", { order: `b${i}`, plan: "fail" });
  await b.send("billing", { order: "b7", plan: "done" });
  await b.send("billing", { order: "b8", plan: "done" });
  await b.send("billing", { order: "b9", plan: "again" });
  await b.send("billing", { plan: "fail" });
  await b.send("solo", { order: "s1", plan: "fail" }, { singletonKey: "k1" });
  await b.send("solo", { order: "s2", plan: "again" }, { singletonKey: "k2" });
  for (let i = 0; ; i++) {
    const dead = await count("SELECT count(*) AS n FROM pgboss.job WHERE name = 'billing_dlq'");
    const failed = await count("SELECT count(*) AS n FROM pgboss.job WHERE name = 'solo' AND state = 'failed'");
    if (dead === 10 && failed === 2) break;
    if (i > 1200) throw new Error(`pg-boss: ${dead} of 10 dead letters, ${failed} of 2 failed after 60 s`);
    await sleep(50);
  }
  const twin = await b.send("solo", { order: "twin", plan: "fail" }, { singletonKey: "k1", startAfter: 3600 });
  if (!twin) throw new Error("pg-boss refused the twin");
}

// pg-boss 9, 10 or 11 in schema pgbossV: its API differs by release (9: no queues to create,
// one job per handler call, noSupervisor; 10 and 11: createQueue, an array of jobs).
async function legacyBoss(v, Boss) {
  const schema = `pgboss${v}`;
  const opts = v === 9
    ? { connectionString: conn, schema, max: 3, noSupervisor: true, noScheduling: true }
    : { connectionString: conn, schema, max: 3, supervise: false, schedule: false };
  const b = new Boss(opts);
  b.on("error", (e) => console.error(`pg-boss ${v}:`, e));
  await b.start();
  const plain = `plain${v}`, bill = `bill${v}`;
  const runner = `pg-boss-${v}`;
  if (v === 9) {
    await b.work(plain, { newJobCheckInterval: 200 }, async (job) => handle(runner, job.data));
  } else {
    await b.createQueue(plain, { retryLimit: 0 });
    await b.createQueue(`${bill}_dlq`, { retryLimit: 0 });
    await b.createQueue(bill, { deadLetter: `${bill}_dlq`, retryLimit: 0 });
    const worker = async (jobs) => { for (const j of jobs) await handle(runner, j.data); };
    await b.work(plain, { pollingIntervalSeconds: 0.5 }, worker);
    await b.work(bill, { pollingIntervalSeconds: 0.5 }, worker);
    for (let i = 1; i <= 3; i++) await b.send(bill, { order: `${v}b${i}`, plan: i < 3 ? "fail" : "done" }, { retryLimit: 0 });
  }
  await b.send(plain, { order: `${v}p1`, plan: "fail" }, { retryLimit: 0 });
  await b.send(plain, { order: `${v}p2`, plan: "done" }, { retryLimit: 0 });
  if (v === 9) await b.send(plain, { order: "9p3", plan: "fail" }, { retryLimit: 0, singletonKey: "k9" });
  const failed = v === 9 ? 3 : 2, copies = v === 9 ? 0 : 3;
  for (let i = 0; ; i++) {
    const f = await count(`SELECT count(*) AS n FROM ${schema}.job WHERE name = '${plain}' AND state = 'failed'`);
    const c = v === 9 ? 0 : await count(`SELECT count(*) AS n FROM ${schema}.job WHERE name = '${bill}_dlq'`);
    if (f === failed && c === copies) break;
    if (i > 1200) throw new Error(`pg-boss ${v}: ${f} of ${failed} failed, ${c} of ${copies} copies after 60 s`);
    await sleep(50);
  }
  if (v === 9 && !(await b.send(plain, { order: "twin9", plan: "fail" }, { singletonKey: "k9", startAfter: 3600 })))
    throw new Error("pg-boss 9 refused the twin");
}

async function graphile() {
  const utils = await makeWorkerUtils({ connectionString: conn });
  await utils.migrate();
  await run({
    connectionString: conn, concurrency: 1, noHandleSignals: true, pollInterval: 200,
    taskList: { order: async (payload) => handle("graphile-worker", payload) },
  });
  const add = (order, plan) => utils.addJob("order", { order, plan }, { queueName: "mail", maxAttempts: 1 });
  for (let i = 1; i <= 4; i++) await add(`g${i}`, "fail");
  await add("g5", "done");
  await add("g6", "again");
  for (let i = 0; ; i++) {
    const dead = await count("SELECT count(*) AS n FROM graphile_worker._private_jobs " +
      "WHERE attempts >= max_attempts AND locked_at IS NULL");
    if (dead === 6) break;
    if (i > 1200) throw new Error(`graphile-worker: ${dead} of 6 dead after 60 s`);
    await sleep(50);
  }
  await utils.release();
}

try {
  await Promise.all([boss(), graphile(), legacyBoss(9, PgBoss9), legacyBoss(10, PgBoss10),
    legacyBoss(11, PgBoss11)]);
  writeFileSync(readyFile, "ready\n");
} catch (e) {
  console.error(e);
  process.exit(1);
}
process.on("SIGTERM", () => process.exit(0));
await new Promise(() => {});
