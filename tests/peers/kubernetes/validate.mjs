// validate.mjs RENDERED.json...: every object kustomize rendered (each file a JSON array of them,
// converted from kubectl kustomize's YAML) against its schema, by the validate() of its
// kubernetes-models class (the Kubernetes API's OpenAPI schema, and the Prometheus Operator's CRD
// schemas for monitoring.coreos.com), and every pod template against the hardening qrel's
// manifests promise (docs/kubernetes.md): the restricted Pod Security Standard and more. One line
// per object: "ok FILE KIND/NAME" or "FAIL FILE KIND/NAME: why". Exits 1 when any object fails.
import { readFileSync } from "node:fs";

// apiVersion -> the module that holds its classes (each class named as its kind).
const modules = {
  v1: "kubernetes-models/v1",
  "apps/v1": "kubernetes-models/apps/v1",
  "monitoring.coreos.com/v1": "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1",
  "monitoring.coreos.com/v1alpha1":
    "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1alpha1",
};

// The pod template's faults, as the restricted profile and the systemd unit's hardening have it.
function hardening(pod) {
  const why = [];
  const psc = pod.securityContext || {};
  if (pod.automountServiceAccountToken !== false) why.push("a service account token is mounted");
  for (const k of ["hostNetwork", "hostPID", "hostIPC"]) if (pod[k]) why.push(`${k} is set`);
  for (const c of [...(pod.initContainers || []), ...(pod.containers || [])]) {
    const sc = c.securityContext || {};
    const has = (k) => (sc[k] !== undefined ? sc[k] : psc[k]);
    const where = `container ${c.name}`;
    if (has("runAsNonRoot") !== true) why.push(`${where}: runAsNonRoot is not true`);
    if (!(Number.isInteger(has("runAsUser")) && has("runAsUser") > 0))
      why.push(`${where}: no fixed non-root runAsUser`);
    if (sc.privileged === true) why.push(`${where}: privileged`);
    if (sc.allowPrivilegeEscalation !== false)
      why.push(`${where}: allowPrivilegeEscalation is not false`);
    if (sc.readOnlyRootFilesystem !== true) why.push(`${where}: the root file system is writable`);
    const caps = sc.capabilities || {};
    if (!(caps.drop || []).includes("ALL")) why.push(`${where}: capabilities are not all dropped`);
    if ((caps.add || []).length) why.push(`${where}: adds capabilities ${caps.add}`);
    if ((has("seccompProfile") || {}).type !== "RuntimeDefault")
      why.push(`${where}: seccompProfile is not RuntimeDefault`);
    const r = c.resources || {};
    if (!(r.requests && r.requests.memory && r.requests.cpu && r.limits && r.limits.memory))
      why.push(`${where}: no memory and cpu requests and memory limit`);
  }
  return why;
}

let failed = 0;
for (const file of process.argv.slice(2)) {
  for (const obj of JSON.parse(readFileSync(file, "utf8"))) {
    const what = `${file} ${obj.kind}/${obj.metadata && obj.metadata.name}`;
    const fail = (why) => {
      failed++;
      console.log(`FAIL ${what}: ${why}`);
    };
    const mod = modules[obj.apiVersion];
    if (!mod) {
      fail(`no schema for apiVersion ${obj.apiVersion}`);
      continue;
    }
    const cls = (await import(mod))[obj.kind];
    if (!cls) {
      fail(`no schema for kind ${obj.kind} in ${obj.apiVersion}`);
      continue;
    }
    try {
      new cls(obj).validate();
    } catch (e) {
      fail(`schema: ${String(e.message).split("\n").slice(0, 5).join("; ")}`);
      continue;
    }
    const pod = obj.spec && obj.spec.template && obj.spec.template.spec;
    const why = pod ? hardening(pod) : [];
    if (why.length) fail(`hardening: ${why.join("; ")}`);
    else console.log(`ok ${what}`);
  }
}
process.exit(failed ? 1 : 0);
