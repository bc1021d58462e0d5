#!/usr/bin/env python3
"""real_plane: pods placed per second through a real kube-apiserver and kube-scheduler with DRA,
with no webhook, with a do-nothing webhook pair (bench/noop_webhook.cc) and with gpu-tenancy's
webhooks (`serve --kubeconfig`, its own webhook configurations), in the same run.

Each rep starts a fresh control plane on loopback (etcd, kube-apiserver, kube-scheduler with
its defaults and no extender), publishes --nodes fake nodes whose ResourceSlices offer --gpus
H100s each (NVIDIA's attributes, 81559Mi of memory), starts the webhook, then creates --pods
pods, each with its own ResourceClaim for one GPU of class gpu.nvidia.com, from --clients
threads, and times until kube-scheduler has bound the last one. No kubelet and no
kube-controller-manager run: pods bind and never start. Modes:
  none                 no webhook
  noop                 the do-nothing webhook pair, with gpu-tenancy's rules and matchConditions
  gpu-tenancy          tenant `team`, every mode allowed, gpuMemoryPerPod: 80Gi
  gpu-tenancy-nolimit  the same tenant without limits: nothing for its claims' selectors
Reps rotate through the modes so that drift on the machine falls on all of them.

Not part of CI: it needs kube-apiserver and kube-scheduler (v1.36 or later) in $K8S_BIN and
etcd on the PATH.

  K8S_BIN=/path/to/bin bench/real_plane.py [--nodes 500] [--gpus 20] [--pods 1000] [--reps 3]
      [--clients 8] [--modes none,noop,gpu-tenancy,gpu-tenancy-nolimit] [--build build]
      [--md FILE]
"""
import argparse
import base64
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

API_PORT = 16443
ETCD_PORT = 12379
NOOP_PORT = 18443
SERVE_PORT = 18444
SERVE_OPERATOR_PORT = 18081

POLICY = """tiers:
  - {name: trusted, modes: [exclusive, timeslice, mps, mig, mig-shared]}
tenants:
  - name: team
    tier: trusted
    namespaces: [team]
    limits: {gpuMemoryPerPod: 80Gi}
unknownTenant: deny
"""


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(d):
    """A CA, the apiserver's serving cert, client certs for the admin and the scheduler, the
    service-account key, and the webhooks' serving cert (its own CA, for caBundle)."""
    os.makedirs(d, exist_ok=True)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=bench-ca",
            "-keyout", "ca.key", "-out", "ca.crt", cwd=d)
    for name, subject, ext in [
            ("apiserver", "/CN=kube-apiserver", "subjectAltName=IP:127.0.0.1,DNS:localhost"),
            ("admin", "/O=system:masters/CN=bench-admin", "extendedKeyUsage=clientAuth"),
            ("scheduler", "/CN=system:kube-scheduler", "extendedKeyUsage=clientAuth"),
            ("webhook", "/CN=webhook", "subjectAltName=IP:127.0.0.1")]:
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout",
                f"{name}.key", "-out", f"{name}.csr", cwd=d)
        with open(f"{d}/{name}.ext", "w") as f:
            f.write(ext + "\n")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.crt",
                cwd=d)
    openssl("genrsa", "-out", "sa.key", "2048", cwd=d)
    openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=d)
    for user in ("admin", "scheduler"):
        with open(f"{d}/{user}.kubeconfig", "w") as f:
            f.write(f"""apiVersion: v1
kind: Config
clusters:
- name: bench
  cluster: {{server: "https://127.0.0.1:{API_PORT}", certificate-authority: "{d}/ca.crt"}}
users:
- name: {user}
  user: {{client-certificate: "{d}/{user}.crt", client-key: "{d}/{user}.key"}}
contexts: [{{name: bench, context: {{cluster: bench, user: {user}}}}}]
current-context: bench
""")


class Api:
    """The admin's HTTPS client, one keep-alive connection per thread."""

    def __init__(self, pki):
        self.ctx = ssl.create_default_context(cafile=f"{pki}/ca.crt")
        self.ctx.load_cert_chain(f"{pki}/admin.crt", f"{pki}/admin.key")
        self.local = threading.local()

    def connection(self):
        c = getattr(self.local, "c", None)
        if c is None:
            c = http.client.HTTPSConnection("127.0.0.1", API_PORT, context=self.ctx, timeout=60)
            self.local.c = c
        return c

    def call(self, method, path, body=None, content_type="application/json"):
        for _ in range(5):
            c = self.connection()
            try:
                c.request(method, path, body=None if body is None else json.dumps(body),
                          headers={"Content-Type": content_type})
                r = c.getresponse()
                data = r.read()
            except (http.client.HTTPException, OSError):
                c.close()
                self.local.c = None
                time.sleep(0.1)
                continue
            if r.status in (200, 201):
                return json.loads(data) if data else None
            if r.status == 429 or r.status >= 500:
                time.sleep(0.2)
                continue
            raise RuntimeError(f"{method} {path}: {r.status} {data[:300]!r}")
        raise RuntimeError(f"{method} {path}: no answer after 5 tries")

    def ready(self):
        try:
            c = http.client.HTTPSConnection("127.0.0.1", API_PORT, context=self.ctx, timeout=2)
            c.request("GET", "/readyz")
            return c.getresponse().status == 200
        except OSError:
            return False


def stop(proc):
    """SIGTERM, and SIGKILL after ten seconds; returns once it is gone."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class ControlPlane:
    def __init__(self, k8s_bin, work):
        self.k8s_bin, self.work, self.pki = k8s_bin, work, f"{work}/pki"
        self.procs = []

    def start(self, name, argv):
        log = open(f"{self.work}/{name}.log", "a")
        self.procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT))

    def up(self):
        for port in (ETCD_PORT, API_PORT):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    raise RuntimeError(f"port {port} is taken: another etcd or kube-apiserver?")
        data = f"{self.work}/etcd"
        subprocess.run(["rm", "-rf", data], check=True)
        self.start("etcd", ["etcd", "--name", "bench", "--data-dir", data,
                            "--listen-client-urls", f"http://127.0.0.1:{ETCD_PORT}",
                            "--advertise-client-urls", f"http://127.0.0.1:{ETCD_PORT}",
                            "--listen-peer-urls", "http://127.0.0.1:12380",
                            "--initial-advertise-peer-urls", "http://127.0.0.1:12380",
                            "--initial-cluster", "bench=http://127.0.0.1:12380"])
        p = self.pki
        self.start("apiserver", [
            f"{self.k8s_bin}/kube-apiserver", f"--etcd-servers=http://127.0.0.1:{ETCD_PORT}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={API_PORT}", f"--tls-cert-file={p}/apiserver.crt",
            f"--tls-private-key-file={p}/apiserver.key", f"--client-ca-file={p}/ca.crt",
            f"--service-account-key-file={p}/sa.pub",
            f"--service-account-signing-key-file={p}/sa.key",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--service-cluster-ip-range=10.96.0.0/24", "--endpoint-reconciler-type=none",
            "--authorization-mode=Node,RBAC", "--profiling=false"])
        api = Api(self.pki)
        for _ in range(120):
            if api.ready():
                return api
            time.sleep(0.5)
        with open(f"{self.work}/apiserver.log") as f:
            tail = f.read()[-2000:]
        raise RuntimeError(f"kube-apiserver never became ready; its log ends:\n{tail}")

    def scheduler(self):
        config = f"{self.work}/scheduler.yaml"
        with open(config, "w") as f:
            f.write(f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{kubeconfig: {self.pki}/scheduler.kubeconfig, qps: 1000, burst: 2000}}
leaderElection: {{leaderElect: false}}
""")
        self.start("scheduler", [f"{self.k8s_bin}/kube-scheduler", f"--config={config}",
                                 "--bind-address=127.0.0.1", "--secure-port=20259"])

    def down(self):
        for proc in reversed(self.procs):
            stop(proc)
        self.procs = []


def parallel(threads, items, f):
    """f(item) for every item on `threads` threads; raises with the first error."""
    lock = threading.Lock()
    pending = iter(items)
    errors = []

    def run():
        while True:
            with lock:
                item = next(pending, None)
            if item is None:
                return
            try:
                f(item)
            except Exception as e:  # noqa: BLE001 (reported below)
                with lock:
                    errors.append(str(e))

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise RuntimeError(f"{len(errors)} failed, the first: {errors[0]}")


def gpu(node, index):
    return {"name": f"gpu-{index}",
            "attributes": {
                "type": {"string": "gpu"}, "architecture": {"string": "Hopper"},
                "productName": {"string": "NVIDIA H100 80GB HBM3"}, "brand": {"string": "Nvidia"},
                "uuid": {"string": f"GPU-{node}-{index:04d}"}, "index": {"int": index},
                "cudaComputeCapability": {"version": "9.0.0"},
                "driverVersion": {"version": "570.124.6"}},
            "capacity": {"memory": {"value": "81559Mi"}}}


def publish_cluster(api, nodes, gpus):
    api.call("POST", "/apis/resource.k8s.io/v1/deviceclasses", {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && "
                                        "device.attributes['gpu.nvidia.com'].type == 'gpu'"}}]}})
    for ns in ("team", "gpu-tenancy-system"):
        api.call("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    # No kube-controller-manager: the ServiceAccount admission wants the default account.
    api.call("POST", "/api/v1/namespaces/team/serviceaccounts", {"metadata": {"name": "default"}})

    def node(i):
        name = f"node-{i:04d}"
        api.call("POST", "/api/v1/nodes",
                 {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}})
        resources = {"cpu": "128", "memory": "1Ti", "pods": "110"}
        api.call("PATCH", f"/api/v1/nodes/{name}/status", {"status": {
            "capacity": resources, "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "no kubelet: a bench node",
                            "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}]}},
            "application/merge-patch+json")
        # kube-apiserver taints a new node not-ready; no node controller lifts it.
        api.call("PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": None}},
                 "application/merge-patch+json")
        api.call("POST", "/apis/resource.k8s.io/v1/resourceslices", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{name}-gpu.nvidia.com"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": name,
                     "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [gpu(name, j) for j in range(gpus)]}})
    parallel(8, range(nodes), node)


def webhook_configurations(gt, policy, pki, port):
    """gpu-tenancy's own configurations (rules and matchConditions), pointed at 127.0.0.1."""
    import yaml  # python3-yaml
    text = subprocess.run([gt, "webhook-config", "--policy", policy], check=True,
                          capture_output=True, text=True).stdout
    with open(f"{pki}/ca.crt", "rb") as f:
        ca = base64.b64encode(f.read()).decode()
    docs = [d for d in yaml.safe_load_all(text) if d]
    for d in docs:
        for w in d["webhooks"]:
            path = w["clientConfig"]["service"]["path"]
            w["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca}
    return docs


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_webhook(mode, build, work, plane):
    """The webhook process and its port; (None, None) for mode none."""
    pki = plane.pki
    if mode == "none":
        return None, None
    if mode == "noop":
        proc = subprocess.Popen([f"{build}/bench/noop_webhook", "--tls-cert", f"{pki}/webhook.crt",
                                 "--tls-key", f"{pki}/webhook.key", "--listen-port",
                                 str(NOOP_PORT)], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        for line in proc.stdout:
            if line.startswith("ready"):
                threading.Thread(target=lambda: proc.stdout.read(), daemon=True).start()
                return proc, NOOP_PORT
        raise RuntimeError("noop_webhook never became ready")
    policy = f"{work}/{mode}.yaml"
    log = open(f"{work}/serve.log", "a")
    proc = subprocess.Popen([f"{build}/gpu-tenancy", "serve", "--policy", policy, "--tls-cert",
                             f"{pki}/webhook.crt", "--tls-key", f"{pki}/webhook.key",
                             "--kubeconfig", f"{pki}/admin.kubeconfig",
                             "--listen", f"127.0.0.1:{SERVE_PORT}",
                             "--metrics-listen", f"127.0.0.1:{SERVE_OPERATOR_PORT}",
                             "--lease-namespace", "gpu-tenancy-system", "--identity", "bench"],
                            stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        try:
            c = http.client.HTTPConnection("127.0.0.1", SERVE_OPERATOR_PORT, timeout=1)
            c.request("GET", "/readyz")
            if c.getresponse().status == 200:
                return proc, SERVE_PORT
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"serve never became ready; see {work}/serve.log")


def create_pods(api, pods, clients):
    """Creates the claims and pods; seconds until all were created and until all were bound."""
    bound = {}
    all_bound = threading.Event()

    def saw(pod):
        name = pod.get("metadata", {}).get("name")
        if pod.get("spec", {}).get("nodeName") and name not in bound:
            bound[name] = time.monotonic()
            if len(bound) >= pods:
                all_bound.set()

    def watch():
        # kube-apiserver may end a watch at any time: list again (when the version is gone) and
        # watch on from where it left off.
        version = ""
        while not all_bound.is_set():
            if not version:
                listed = api.call("GET", "/api/v1/namespaces/team/pods")
                for pod in listed["items"]:
                    saw(pod)
                version = listed["metadata"]["resourceVersion"]
            c = http.client.HTTPSConnection("127.0.0.1", API_PORT, context=api.ctx, timeout=900)
            c.request("GET", "/api/v1/namespaces/team/pods?watch=1&allowWatchBookmarks=true"
                      f"&resourceVersion={version}")
            r = c.getresponse()
            while not all_bound.is_set():
                line = r.readline()
                if not line:
                    break
                event = json.loads(line)
                if event.get("type") == "ERROR":
                    version = ""
                    break
                pod = event.get("object", {})
                version = pod.get("metadata", {}).get("resourceVersion", version)
                if event.get("type") != "BOOKMARK":
                    saw(pod)
            c.close()

    threading.Thread(target=watch, daemon=True).start()
    time.sleep(0.5)

    def create(i):
        name = f"p-{i:05d}"
        api.call("POST", "/apis/resource.k8s.io/v1/namespaces/team/resourceclaims", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "team"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.nvidia.com", "count": 1}}]}}})
        api.call("POST", "/api/v1/namespaces/team/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "team"},
            "spec": {"automountServiceAccountToken": False,
                     "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
                     "containers": [{"name": "main", "image": "registry.example/cuda:12",
                                     "resources": {"claims": [{"name": "gpu"}]}}]}})

    start = time.monotonic()
    parallel(clients, range(pods), create)
    created = time.monotonic() - start
    if not all_bound.wait(900):
        raise RuntimeError(f"only {len(bound)} of {pods} pods were bound")
    return created, max(bound.values()) - start


def one_rep(mode, args, work):
    plane = ControlPlane(args.k8s_bin, work)
    proc = None
    try:
        api = plane.up()
        publish_cluster(api, args.nodes, args.gpus)
        proc, port = start_webhook(mode, args.build, work, plane)
        if port:
            # Both webhooks get gpu-tenancy's rules and matchConditions for its limited policy.
            for d in webhook_configurations(f"{args.build}/gpu-tenancy",
                                            f"{work}/gpu-tenancy.yaml", plane.pki, port):
                kind = d["kind"].lower() + "s"
                api.call("POST", f"/apis/admissionregistration.k8s.io/v1/{kind}", d)
            time.sleep(2)  # kube-apiserver's informer of webhook configurations
        plane.scheduler()
        time.sleep(5)
        cpu_before = cpu_seconds(proc.pid) if proc else 0.0
        created, bound = create_pods(api, args.pods, args.clients)
        claim = api.call("GET", "/apis/resource.k8s.io/v1/namespaces/team/resourceclaims/p-00000")
        return {"mode": mode, "pods_per_s": args.pods / bound, "create_s": created,
                "bound_s": bound,
                "webhook_cpu_s": cpu_seconds(proc.pid) - cpu_before if proc else 0.0,
                "selectors": len(claim["spec"]["devices"]["requests"][0]["exactly"]
                                 .get("selectors", []))}
    finally:
        if proc:
            stop(proc)
        plane.down()


def report(args, results):
    modes = args.modes.split(",")
    mean = {m: sum(r["pods_per_s"] for r in results if r["mode"] == m) /
            max(1, sum(1 for r in results if r["mode"] == m)) for m in modes}
    lines = ["## DRA on a real control plane (bench/real_plane.py)", "",
             f"{args.nodes} nodes x {args.gpus} H100s in ResourceSlices, {args.pods} pods each "
             f"with its own ResourceClaim (class gpu.nvidia.com) created from {args.clients} "
             f"threads; a fresh etcd, kube-apiserver and kube-scheduler per rep (defaults, no "
             f"extender), {args.reps} reps rotating through the modes. pods/s: pods over the "
             f"seconds until kube-scheduler bound the last one. Selectors: what the first "
             f"claim's request carried.", "",
             "| mode | pods/s per rep | mean | / noop | create phase (s) | webhook CPU (s) | "
             "selectors |", "|---|---|---|---|---|---|---|"]
    def column(rs, key, form):
        return ", ".join(form.format(r[key]) for r in rs)

    for m in modes:
        rs = [r for r in results if r["mode"] == m]
        ratio = "{:.2f}x".format(mean[m] / mean["noop"]) if mean.get("noop") else ""
        lines.append(f"| {m} | {column(rs, 'pods_per_s', '{:.1f}')} | {mean[m]:.1f} | {ratio} | "
                     f"{column(rs, 'create_s', '{:.1f}')} | "
                     f"{column(rs, 'webhook_cpu_s', '{:.2f}')} | "
                     f"{column(rs, 'selectors', '{}')} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--gpus", type=int, default=20)
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--modes", default="none,noop,gpu-tenancy,gpu-tenancy-nolimit")
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("--md", dest="markdown", help="write the report here as Markdown")
    args = ap.parse_args()
    args.k8s_bin = os.environ.get("K8S_BIN", "")
    if not os.access(f"{args.k8s_bin}/kube-apiserver", os.X_OK):
        sys.exit("real_plane: set K8S_BIN to a directory with kube-apiserver and kube-scheduler")
    args.build = os.path.abspath(args.build)
    with tempfile.TemporaryDirectory(prefix="real-plane-") as work:
        make_pki(f"{work}/pki")
        for mode, text in (("gpu-tenancy", POLICY), ("gpu-tenancy-nolimit", POLICY.replace(
                "    limits: {gpuMemoryPerPod: 80Gi}\n", ""))):
            with open(f"{work}/{mode}.yaml", "w") as f:
                f.write(text)
        results = []
        for rep in range(args.reps):
            for mode in args.modes.split(","):
                r = one_rep(mode, args, work)
                print(json.dumps(r), flush=True)
                results.append(r)
    text = report(args, results)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
