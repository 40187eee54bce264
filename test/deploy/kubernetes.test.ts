// The Kubernetes manifests in deploy/kubernetes, validated offline: each object is built with
// kubernetes-models' class for its apiVersion and kind and checked against the API's OpenAPI
// schema, and a field the schema does not know (a typo the API server's strict field
// validation would refuse) is reported as well. Then the properties the agent and controller
// depend on, and refusals that prove the validator can fail. No cluster is used.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { DaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PriorityClass } from 'kubernetes-models/scheduling.k8s.io/v1/PriorityClass';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const dir = path.join(repo, 'deploy/kubernetes');
const cli = path.join(repo, 'packages/cli/dist/main.js');

type Json = Record<string, unknown>;
interface ModelClass {
  new (data: never): { validate(): void; toJSON(): unknown };
  prototype: { validate(): void };
}

/** The API objects rankd ships, by `apiVersion/kind`; anything else in the directory is an error. */
const MODELS: Record<string, ModelClass> = {
  'v1/Namespace': Namespace,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'apps/v1/DaemonSet': DaemonSet,
  'apps/v1/StatefulSet': StatefulSet,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'scheduling.k8s.io/v1/PriorityClass': PriorityClass,
};

interface Manifest {
  file: string;
  object: Json;
}

/** Every YAML document of every .yaml file but the kustomization (not an API object). */
function loadManifests(): Manifest[] {
  const out: Manifest[] = [];
  for (const file of manifestFiles()) {
    for (const doc of parseAllDocuments(readFileSync(path.join(dir, file), 'utf8'))) {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join('; ')}`);
      const object = doc.toJS() as Json | null;
      if (object !== null) out.push({ file, object });
    }
  }
  return out;
}

function manifestFiles(): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    .sort();
}

function modelOf(object: Json): ModelClass {
  const key = `${String(object['apiVersion'])}/${String(object['kind'])}`;
  const model = MODELS[key];
  if (!model) throw new Error(`no kubernetes-models class for ${key}`);
  return model;
}

/** The schema's verdict: throws with the failing paths, as kubernetes-models words them. */
function validate(object: Json): void {
  new (modelOf(object))(object as never).validate();
}

/**
 * Fields the schema does not define. The OpenAPI schemas do not forbid extra properties, so
 * the validator accepts `hostNetwrk: true`; the API server's strict field validation (kubectl's
 * default) refuses it. The compiled validator reads every property its schema defines, and
 * every entry of a map it types: run it over proxies that record each read, and a key never
 * read is one the schema does not know. One exception: kubernetes-models' schemas lose every
 * property named `description` (PriorityClass's; its types keep it), so those are not judged.
 */
function unknownFields(object: Json): string[] {
  const seen = new Set<string>();
  const present: string[] = [];
  const watch = (value: unknown, at: string): unknown => {
    if (value === null || typeof value !== 'object') return value;
    const isArray = Array.isArray(value);
    const copy: Record<string, unknown> | unknown[] = isArray ? [] : {};
    for (const [key, v] of Object.entries(value)) {
      (copy as Record<string, unknown>)[key] = watch(v, `${at}/${key}`);
      if (!isArray) present.push(`${at}/${key}`);
    }
    return new Proxy(copy, {
      get(target, prop, receiver) {
        if (typeof prop === 'string') seen.add(`${at}/${prop}`);
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
  };
  modelOf(object).prototype.validate.call(watch(object, ''));
  return present.filter((p) => !seen.has(p) && !p.endsWith('/description'));
}

const manifests = loadManifests();

function find(kind: string, name?: string): Json {
  const hit = manifests.find((m) => m.object['kind'] === kind && (name === undefined || meta(m.object).name === name));
  if (!hit) throw new Error(`no ${kind}${name ? ` ${name}` : ''} in deploy/kubernetes`);
  return hit.object;
}

interface Meta {
  name?: string;
  labels?: Record<string, string>;
}

function meta(object: Json): Meta {
  const m = object['metadata'];
  return typeof m === 'object' && m !== null ? m : {};
}

interface Workload {
  selector: { matchLabels: Record<string, string> };
  template: { metadata: { labels: Record<string, string> }; spec: IPodSpec };
}

function workload(object: Json): Workload {
  return object['spec'] as Workload;
}

function onlyContainer(spec: IPodSpec): IContainer {
  if (spec.containers.length !== 1) throw new Error(`expected one container, found ${spec.containers.length}`);
  return spec.containers[0]!;
}

/** `--flag=value` arguments as a map (every rankd flag in the manifests is written that way). */
function flags(container: IContainer): Map<string, string> {
  const out = new Map<string, string>();
  for (const arg of container.args ?? []) {
    const m = /^(--[a-z][a-z-]*)=(.*)$/.exec(arg);
    if (m) out.set(m[1]!, m[2]!);
  }
  return out;
}

function selects(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

const agentDs = find('DaemonSet', 'rankd-agent');
const controllerSts = find('StatefulSet', 'rankd-controller');
const agent = workload(agentDs);
const controller = workload(controllerSts);
const agentContainer = onlyContainer(agent.template.spec);
const controllerContainer = onlyContainer(controller.template.spec);

t.test('every manifest is a valid Kubernetes object with no field its schema lacks', async (t) => {
  t.ok(manifests.length >= 7, `${manifests.length} objects in ${manifestFiles().length} files`);
  for (const { file, object } of manifests) {
    const what = `${file}: ${String(object['kind'])} ${String(meta(object).name)}`;
    t.doesNotThrow(() => validate(object), `${what} validates against its schema`);
    t.same(unknownFields(object), [], `${what} has no unknown field`);
  }
});

t.test('the kustomization lists exactly the manifests present, in namespace rankd', async (t) => {
  const docs = parseAllDocuments(readFileSync(path.join(dir, 'kustomization.yaml'), 'utf8'));
  t.equal(docs.length, 1);
  const k = docs[0]!.toJS() as Json;
  t.equal(k['apiVersion'], 'kustomize.config.k8s.io/v1beta1');
  t.equal(k['kind'], 'Kustomization');
  t.equal(k['namespace'], 'rankd');
  t.same([...(k['resources'] as string[])].sort(), manifestFiles(), 'resources = the .yaml files of the directory');
  t.equal(meta(find('Namespace')).name, 'rankd');
  const images = k['images'] as { name: string; newName?: string; newTag?: string }[];
  t.same(images, [{ name: 'ghcr.io/rankd/rankd', newName: 'ghcr.io/rankd/rankd', newTag: '0.1.0' }]);
  for (const c of [agentContainer, controllerContainer]) {
    t.equal(c.image, 'ghcr.io/rankd/rankd:0.1.0', `${c.name}: the image the images: entry rewrites`);
  }
});

t.test(
  'the agent DaemonSet: host network and PID, read-only /sys and /dev/infiniband, no more than it needs',
  async (t) => {
    const spec = agent.template.spec;
    t.ok(selects(agent.selector.matchLabels, agent.template.metadata.labels), 'its selector selects its pods');
    t.equal(spec.hostNetwork, true, 'hostNetwork');
    t.equal(spec.hostPID, true, 'hostPID');
    t.equal(spec.dnsPolicy, 'ClusterFirstWithHostNet', 'cluster DNS with the host network');
    t.equal(spec.automountServiceAccountToken, false, 'no API token');
    t.equal(spec.enableServiceLinks, false, 'no injected RANKD_*-like service variables');
    t.same(spec.nodeSelector, { 'rankd.io/agent': 'true' }, 'opt-in by node label');
    const tolerated = (spec.tolerations ?? []).map((x) => x.key);
    t.ok(tolerated.includes('nvidia.com/gpu'), 'tolerates the GPU taint');
    t.equal((agentDs['spec'] as { updateStrategy: { type: string } }).updateStrategy.type, 'OnDelete');
    t.equal(spec.priorityClassName, meta(find('PriorityClass')).name);

    const volumes = new Map((spec.volumes ?? []).map((v) => [v.name, v]));
    const mountOf = (hostPath: string) => {
      const volume = [...volumes.values()].find((v) => v.hostPath?.path === hostPath);
      const mount = agentContainer.volumeMounts?.find((m) => m.name === volume?.name);
      return { volume, mount };
    };
    for (const hostPath of ['/sys', '/dev/infiniband']) {
      const { volume, mount } = mountOf(hostPath);
      t.equal(mount?.mountPath, hostPath, `${hostPath} is mounted at its own path`);
      t.equal(mount?.readOnly, true, `${hostPath} is read-only`);
      t.equal(volume?.hostPath?.type, 'Directory', `${hostPath} must exist: never created on the host`);
    }
    const state = mountOf('/var/lib/rankd');
    t.equal(state.mount?.mountPath, '/var/lib/rankd', 'state and spool on the host');
    t.not(state.mount?.readOnly, true);
    const f = flags(agentContainer);
    t.equal(f.get('--state-dir'), '/var/lib/rankd/agent');
    t.equal(f.get('--spool-dir'), '/var/lib/rankd/spool');

    const sc = agentContainer.securityContext ?? {};
    t.not(sc.privileged, true, 'not privileged');
    t.same(sc.capabilities?.drop, ['ALL']);
    t.same(
      [...(sc.capabilities?.add ?? [])].sort(),
      ['DAC_READ_SEARCH', 'KILL', 'SETGID', 'SETUID', 'SYS_NICE', 'SYS_RESOURCE'],
      'exactly the capabilities the agent uses',
    );
    t.equal(sc.seccompProfile?.type, 'RuntimeDefault');
    t.equal(sc.allowPrivilegeEscalation, false);
    t.same(agentContainer.readinessProbe?.exec?.command, ['test', '-s', '/var/lib/rankd/agent/node.crt']);
    t.equal(agentContainer.readinessProbe?.httpGet, undefined, 'the agent listens on no port');
    t.equal(agentContainer.livenessProbe, undefined, 'no liveness probe: a restart would end every rank');
    t.ok(agentContainer.resources?.requests?.['memory'], 'memory request');
    t.equal(agentContainer.resources?.limits, undefined, 'no limits: every rank of the node shares this cgroup');
  },
);

t.test('the controller StatefulSet keeps its store on a claim and its Service selects its pod', async (t) => {
  const spec = controllerSts['spec'] as { replicas: number; serviceName: string; volumeClaimTemplates: Json[] };
  t.equal(spec.replicas, 1);
  t.ok(selects(controller.selector.matchLabels, controller.template.metadata.labels), 'its selector selects its pods');
  const claims = spec.volumeClaimTemplates.map((c) => meta(c).name);
  t.equal(claims.length, 1, 'one volume claim template');
  const dataMount = controllerContainer.volumeMounts?.find((m) => m.name === claims[0]);
  t.equal(dataMount?.mountPath, '/var/lib/rankd/controller', 'the claim is the controller directory');
  const f = flags(controllerContainer);
  t.equal(f.get('--listen'), '0.0.0.0:7480');
  t.ok(f.get('--data-dir')?.startsWith('/var/lib/rankd/controller/'), 'the data directory is on the claim');
  t.same(
    controllerContainer.ports?.map((p) => [p.name, p.containerPort]),
    [['https', 7480]],
  );
  t.equal(controllerContainer.readinessProbe?.httpGet?.scheme, 'HTTPS');
  const sc = controller.template.spec.securityContext ?? {};
  t.equal(sc.runAsNonRoot, true, 'the controller runs as no root');
  t.same(controllerContainer.securityContext?.capabilities?.drop, ['ALL']);
  t.equal(controllerContainer.securityContext?.readOnlyRootFilesystem, true);

  const service = find('Service', spec.serviceName);
  const svc = service['spec'] as { clusterIP?: string; selector: Record<string, string>; ports: Json[] };
  t.ok(selects(svc.selector, controller.template.metadata.labels), 'the Service selects the controller pod');
  t.notOk(selects(svc.selector, agent.template.metadata.labels), 'and not the agents');
  t.same(
    svc.ports.map((p) => [p['port'], p['targetPort']]),
    [[7480, 'https']],
  );
  t.equal(svc.clusterIP, 'None', 'headless: its DNS name is the pod address the certificate names');
  t.equal(controller.template.spec.setHostnameAsFQDN, true, 'the certificate carries the FQDN');

  // the agents dial the name the controller's certificate carries
  const namespace = meta(find('Namespace')).name!;
  const fqdn = `${meta(controllerSts).name!}-0.${meta(service).name!}.${namespace}.svc.cluster.local`;
  t.ok(fqdn.length <= 64, `${fqdn} fits the 64 characters setHostnameAsFQDN allows`);
  t.equal(flags(agentContainer).get('--controller'), `https://${fqdn}:7480`);
});

t.test('the join Secret is mounted into both, 0400, where --join-secret-file looks', async (t) => {
  const secret = find('Secret');
  t.equal(secret['data'], undefined, 'no data in the repo: applying it never replaces the real secret');
  t.equal(secret['stringData'], undefined);
  for (const [what, spec, container] of [
    ['agent', agent.template.spec, agentContainer],
    ['controller', controller.template.spec, controllerContainer],
  ] as const) {
    const volume = spec.volumes?.find((v) => v.secret?.secretName === meta(secret).name);
    t.ok(volume, `${what}: a volume of the Secret`);
    t.equal(volume?.secret?.defaultMode, 0o400, `${what}: mode 0400`);
    const mount = container.volumeMounts?.find((m) => m.name === volume?.name);
    t.equal(mount?.readOnly, true, `${what}: mounted read-only`);
    const item = volume?.secret?.items?.[0];
    t.equal(item?.key, 'secret');
    t.equal(
      flags(container).get('--join-secret-file'),
      `${mount?.mountPath}/${item?.path}`,
      `${what}: --join-secret-file names the mounted file`,
    );
  }
  t.match(flags(controllerContainer).get('--join-secret-uses') ?? '', /^[1-9]\d*$/, 'the controller bounds its uses');
});

t.test('the NetworkPolicy admits only 7480 to the controller, agents by address', async (t) => {
  const policy = find('NetworkPolicy')['spec'] as {
    podSelector: { matchLabels: Record<string, string> };
    policyTypes: string[];
    ingress: { from: Json[]; ports: { protocol: string; port: number }[] }[];
  };
  t.ok(selects(policy.podSelector.matchLabels, controller.template.metadata.labels), 'selects the controller');
  t.notOk(selects(policy.podSelector.matchLabels, agent.template.metadata.labels), 'not the agents');
  t.same(policy.policyTypes, ['Ingress']);
  for (const rule of policy.ingress) t.same(rule.ports, [{ protocol: 'TCP', port: 7480 }], 'port 7480 only');
  const sources = policy.ingress.flatMap((r) => r.from);
  t.ok(
    sources.some((s) => s['ipBlock']),
    'an ipBlock for the agents: hostNetwork pods are not selected by pod selectors',
  );
});

t.test('every flag the manifests pass exists in the real CLI', async (t) => {
  for (const [container, command] of [
    [agentContainer, 'agent'],
    [controllerContainer, 'controller'],
  ] as const) {
    t.equal(container.args?.[0], command);
    const help = spawnSync(process.execPath, [cli, command, '--help'], { encoding: 'utf8', timeout: 60_000 });
    t.equal(help.status, 0, `rankd ${command} --help`);
    const names = [...flags(container).keys()];
    t.equal(names.length, (container.args ?? []).length - 1, `${command}: every argument is --flag=value`);
    for (const flag of names) t.match(help.stdout, new RegExp(`${flag}\\b`), `rankd ${command} knows ${flag}`);
  }
});

t.test('the validator refuses broken copies, and the originals still pass', async (t) => {
  const copy = () => structuredClone(agentDs);
  const podSpec = (o: Json) => (o['spec'] as Workload).template.spec as unknown as Json;

  const wrongType = copy();
  podSpec(wrongType)['hostNetwork'] = 'true';
  t.throws(() => validate(wrongType), /hostNetwork must be boolean/, 'a string where a boolean goes');

  const missing = copy();
  delete podSpec(missing)['containers'];
  t.throws(() => validate(missing), /must have required property containers/, 'a pod without containers');

  const badMode = copy();
  (podSpec(badMode)['volumes'] as Json[]).push({ name: 'x', secret: { secretName: 'y', defaultMode: '0400' } });
  t.throws(() => validate(badMode), /defaultMode must be integer/, 'a mode written as a string');

  const typo = copy();
  const typoSpec = podSpec(typo);
  typoSpec['hostNetwrk'] = typoSpec['hostNetwork'];
  delete typoSpec['hostNetwork'];
  t.doesNotThrow(() => validate(typo), 'the schema alone lets a misspelt field through');
  t.same(unknownFields(typo), ['/spec/template/spec/hostNetwrk'], 'the unknown-field check names it');

  const service = structuredClone(find('Service'));
  ((service['spec'] as Json)['ports'] as Json[])[0]!['port'] = '7480/tcp';
  t.throws(() => validate(service), /port must be integer/, 'a Service port that is not a number');

  const wrongKind = { ...copy(), apiVersion: 'apps/v1beta9' };
  t.throws(() => validate(wrongKind), /no kubernetes-models class for apps\/v1beta9\/DaemonSet/);

  t.doesNotThrow(() => validate(agentDs), 'the DaemonSet itself is unchanged and valid');
  t.same(unknownFields(agentDs), []);
});
