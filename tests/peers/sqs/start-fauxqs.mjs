// start-fauxqs.mjs PORT_FILE...: runs the fauxqs SQS emulator on 127.0.0.1, one emulator per
// PORT_FILE, each on a free port which it writes to its PORT_FILE once it listens. Stops on SIGTERM.
//
// Why not fauxqs' own CLI or startFauxqs(): both listen on 0.0.0.0 and log every request. And
// fauxqs updates its counters lazily: an expired visibility timeout or an elapsed DelaySeconds
// only takes effect inside ReceiveMessage, so GetQueueAttributes would report stale counts to
// a monitor that never receives. The timer pump below runs the store's own timer step (what
// ReceiveMessage runs) every 200 ms, as real SQS's timers would. It reaches into fauxqs' dist/
// files, so the fauxqs version is pinned in package.json.
//
// Why several in one process: the tests of one ctest run share this process
// (tests/shared/server.sh), which saves starting Node once per test, yet each test needs queues
// of its own: fauxqs keeps one namespace of queue names per store (ListQueues shows them all,
// whatever the region), so each test gets its own store behind its own port.
import { writeFileSync, renameSync } from "node:fs";
import { buildApp } from "fauxqs";
import { SqsStore } from "./node_modules/fauxqs/dist/sqs/sqsStore.js";

const portFiles = process.argv.slice(2);
if (portFiles.length === 0) {
  console.error("usage: start-fauxqs.mjs PORT_FILE...");
  process.exit(2);
}
const running = [];
for (const portFile of portFiles) {
  const sqsStore = new SqsStore();
  const app = buildApp({ logger: false, stores: { sqsStore } });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const pump = setInterval(() => sqsStore.processAllTimers(), 200);
  running.push({ app, pump });
  writeFileSync(portFile + ".tmp", String(app.server.address().port));
  renameSync(portFile + ".tmp", portFile);
}

process.on("SIGTERM", async () => {
  for (const { app, pump } of running) {
    clearInterval(pump);
    await app.close();
  }
  process.exit(0);
});
