// sigv4-stub.mjs PORT_FILE: a stand-in for AWS's front door, on 127.0.0.1 and a free port (written
// to PORT_FILE once it listens). Every request's AWS Signature V4 is checked the way AWS checks
// it: the request is signed again with AWS's own signer (@smithy/signature-v4, which the AWS
// SDKs use) from the secret key the stub was given, and the two signatures must be equal. Then:
//   - X-Amz-Target AmazonSQS.* (signed for "sqs") is forwarded to STUB_UPSTREAM (fauxqs);
//   - X-Amz-Target GraniteServiceVersion20100801.GetMetricData (signed for "monitoring") is
//     answered from STUB_CLOUDWATCH, because no emulator has CloudWatch: a JSON file mapping a
//     queue name to [[seconds_ago, value], ...] data of ApproximateAgeOfOldestMessage.
// A wrong signature answers 403 SignatureDoesNotMatch, an unknown key id 403 InvalidClientTokenId,
// a wrong or missing session token 400 UnrecognizedClientException, as AWS does.
// Environment: STUB_ACCESS_KEY, STUB_SECRET_KEY, STUB_SESSION_TOKEN (optional), STUB_REGION,
// STUB_UPSTREAM, STUB_CLOUDWATCH, STUB_LOG (one JSON line per request: target, scope, verdict,
// every header name and value as received except Authorization's signature, and the body).
import { createHash, createHmac } from "node:crypto";
import { appendFileSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import http from "node:http";
import { SignatureV4 } from "@smithy/signature-v4";

const portFile = process.argv[2];
const env = process.env;
const region = env.STUB_REGION || "us-east-1";

class Sha256 {
  constructor(secret) {
    this.h = secret ? createHmac("sha256", Buffer.from(secret)) : createHash("sha256");
  }
  update(data) {
    this.h.update(typeof data === "string" ? data : Buffer.from(data));
  }
  async digest() {
    return new Uint8Array(this.h.digest());
  }
}

function log(entry) {
  if (env.STUB_LOG) appendFileSync(env.STUB_LOG, JSON.stringify(entry) + "\n");
}

function answer(res, status, body, type = "application/x-amz-json-1.0") {
  res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(body) });
  res.end(body);
}

function awsError(res, status, type, message) {
  answer(res, status, JSON.stringify({ __type: `com.amazon.coral.service#${type}`, message }));
}

// "AWS4-HMAC-SHA256 Credential=AK/20261129/us-east-1/sqs/aws4_request, SignedHeaders=a;b, Signature=hex"
function parseAuthorization(h) {
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/.exec(h || "");
  return m && { key: m[1], date: m[2], region: m[3], service: m[4], signed: m[5].split(";"), signature: m[6] };
}

async function verify(req, body, service) {
  const auth = parseAuthorization(req.headers.authorization);
  if (!auth) return { verdict: "NO_SIGV4" };
  const scope = `${auth.date}/${auth.region}/${auth.service}`;
  if (auth.key !== env.STUB_ACCESS_KEY) return { verdict: "UNKNOWN_KEY", scope };
  const xdate = req.headers["x-amz-date"] || "";
  const when = new Date(xdate.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, "$1-$2-$3T$4:$5:$6Z"));
  if (isNaN(when) || Math.abs(Date.now() - when) > 15 * 60 * 1000) return { verdict: "BAD_DATE", scope };
  const headers = {};
  for (const name of auth.signed) headers[name] = req.headers[name] ?? "";
  const signer = new SignatureV4({
    credentials: { accessKeyId: env.STUB_ACCESS_KEY, secretAccessKey: env.STUB_SECRET_KEY },
    region,
    service,
    sha256: Sha256,
    applyChecksum: false,
  });
  const [path, query] = req.url.split("?");
  const signed = await signer.sign(
    { method: req.method, protocol: "http:", hostname: (req.headers.host || "").split(":")[0], path,
      query: Object.fromEntries(new URLSearchParams(query || "")), headers, body },
    { signingDate: when });
  const want = parseAuthorization(signed.headers.authorization);
  if (!want || want.signature !== auth.signature) return { verdict: "MISMATCH", scope };
  if (env.STUB_SESSION_TOKEN && req.headers["x-amz-security-token"] !== env.STUB_SESSION_TOKEN)
    return { verdict: "BAD_TOKEN", scope };
  return { verdict: "MATCH", scope };
}

function cloudwatch(res, body) {
  const data = JSON.parse(readFileSync(env.STUB_CLOUDWATCH, "utf8"));
  const q = JSON.parse(body);
  const now = Math.floor(Date.now() / 1000);
  const results = (q.MetricDataQueries || []).map((m) => {
    const dims = m.MetricStat?.Metric?.Dimensions || [];
    const name = dims.find((d) => d.Name === "QueueName")?.Value;
    const points = (data[name] || []).filter(([ago]) => now - ago >= q.StartTime && now - ago <= q.EndTime);
    return { Id: m.Id, Label: "ApproximateAgeOfOldestMessage", StatusCode: "Complete",
             Timestamps: points.map(([ago]) => now - ago), Values: points.map(([, v]) => v) };
  });
  answer(res, 200, JSON.stringify({ MetricDataResults: results, Messages: [] }));
}

function forward(req, res, body) {
  const up = new URL(env.STUB_UPSTREAM);
  const fwd = http.request({ host: up.hostname, port: up.port, method: "POST", path: "/",
    headers: { "content-type": req.headers["content-type"], "x-amz-target": req.headers["x-amz-target"] } },
  (r) => {
    const chunks = [];
    r.on("data", (c) => chunks.push(c));
    r.on("end", () => answer(res, r.statusCode, Buffer.concat(chunks).toString(), r.headers["content-type"]));
  });
  fwd.on("error", (e) => awsError(res, 500, "InternalFailure", `upstream: ${e.message}`));
  fwd.end(body);
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", async () => {
    const body = Buffer.concat(chunks).toString();
    const target = req.headers["x-amz-target"] || "";
    const service = target.startsWith("AmazonSQS.") ? "sqs" : target.startsWith("GraniteServiceVersion20100801.") ? "monitoring" : "";
    const v = service ? await verify(req, body, service) : { verdict: "UNKNOWN_TARGET" };
    const headers = { ...req.headers };
    if (headers.authorization) headers.authorization = headers.authorization.replace(/Signature=.*/, "Signature=...");
    log({ target, service, ...v, headers, body });
    switch (v.verdict) {
      case "MATCH":
        return service === "sqs" ? forward(req, res, body) : cloudwatch(res, body);
      case "UNKNOWN_KEY":
        return awsError(res, 403, "InvalidClientTokenId", "The security token included in the request is invalid.");
      case "BAD_TOKEN":
        return awsError(res, 400, "UnrecognizedClientException", "The security token included in the request is invalid.");
      case "UNKNOWN_TARGET":
        return awsError(res, 400, "UnknownOperationException", "");
      default:
        return awsError(res, 403, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided.");
    }
  });
});
server.listen(0, "127.0.0.1", () => {
  writeFileSync(portFile + ".tmp", String(server.address().port));
  renameSync(portFile + ".tmp", portFile);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
