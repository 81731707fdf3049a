import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { ServiceMonitor, type IServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { Deployment, type IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler, type IHorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { PodDisruptionBudget, type IPodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import type { IContainer } from 'kubernetes-models/v1/Container';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service, type IService } from 'kubernetes-models/v1/Service';
import { loadConfig, REPO_ROOT, SUBGRAPH_NAMES, type Config } from '../../platform/runtime/config.js';
import { ensureHelm } from '../support/helm.js';

/**
 * The Helm chart (deploy/helm/banking-graph), rendered by the real `helm template` and every
 * manifest validated against the Kubernetes API schemas, then read as a bank's platform reviewer
 * would: each service deployed with both probes, requests, a non-root read-only container and a
 * grace period longer than its drain; the wiring between the services accepted by the services'
 * own configuration loader; secrets only ever the user's.
 */

const CHART = path.join(REPO_ROOT, 'deploy', 'helm', 'banking-graph');
/** A current Kubernetes: a Helm built with `go install` assumes 1.20 otherwise, which the chart refuses. */
const KUBE_VERSION = '1.34.0';
const RELEASE = 'bank';
const NAMESPACE = 'banking';
const SERVICES = [...SUBGRAPH_NAMES, 'gateway', 'rest-adapter'] as const;
type ServiceName = (typeof SERVICES)[number];

/** What a rendered manifest has at least; the schema validation checks the rest. */
interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
}

function isManifest(value: unknown): value is Manifest {
  if (typeof value !== 'object' || value === null) return false;
  const { apiVersion, kind, metadata } = value as Record<string, unknown>;
  return (
    typeof apiVersion === 'string' &&
    typeof kind === 'string' &&
    typeof metadata === 'object' &&
    metadata !== null &&
    typeof (metadata as Record<string, unknown>).name === 'string'
  );
}

/**
 * Parses `helm template`'s output as Kubernetes does (YAML 1.1, where an unquoted `off` or `yes`
 * is a boolean, which a string field then refuses).
 */
function parseManifests(text: string): Manifest[] {
  return parseAllDocuments(text, { version: '1.1' }).flatMap((document) => {
    if (document.errors.length > 0)
      throw new Error(`helm template printed YAML that does not parse: ${document.errors.map((e) => e.message).join('; ')}`);
    const value: unknown = document.toJS();
    if (value === null) return [];
    if (!isManifest(value)) throw new Error(`not a Kubernetes object: ${JSON.stringify(value).slice(0, 200)}`);
    return [value];
  });
}

/** The typed model of each kind the chart renders: kubernetes-models, generated from the Kubernetes OpenAPI schemas and the Prometheus Operator's CRDs. */
const MODEL_TYPES: ReadonlyMap<string, { module: string; type: string }> = new Map([
  ['apps/v1 Deployment', { module: 'kubernetes-models/apps/v1/Deployment', type: 'IDeployment' }],
  ['v1 Service', { module: 'kubernetes-models/v1/Service', type: 'IService' }],
  ['v1 Secret', { module: 'kubernetes-models/v1/Secret', type: 'ISecret' }],
  [
    'autoscaling/v2 HorizontalPodAutoscaler',
    { module: 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler', type: 'IHorizontalPodAutoscaler' },
  ],
  ['policy/v1 PodDisruptionBudget', { module: 'kubernetes-models/policy/v1/PodDisruptionBudget', type: 'IPodDisruptionBudget' }],
  [
    'monitoring.coreos.com/v1 ServiceMonitor',
    { module: '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor', type: 'IServiceMonitor' },
  ],
]);

const describeManifest = (doc: Manifest) => `${doc.kind} ${doc.metadata.name}`;

/** Validates each manifest with its kind's JSON schema (types, required fields, enums, formats); returns the faults. */
function schemaFaults(docs: readonly Manifest[]): string[] {
  const validate = (doc: Manifest): void => {
    if (Deployment.is(doc)) new Deployment(doc).validate();
    else if (Service.is(doc)) new Service(doc).validate();
    else if (Secret.is(doc)) new Secret(doc).validate();
    else if (HorizontalPodAutoscaler.is(doc)) new HorizontalPodAutoscaler(doc).validate();
    else if (PodDisruptionBudget.is(doc)) new PodDisruptionBudget(doc).validate();
    else if (ServiceMonitor.is(doc)) new ServiceMonitor(doc).validate();
    else throw new Error(`no schema for ${doc.apiVersion} ${doc.kind}`);
  };
  return docs.flatMap((doc) => {
    try {
      validate(doc);
      return [];
    } catch (error) {
      return [`${describeManifest(doc)}: ${(error as Error).message}`];
    }
  });
}

/**
 * The schemas leave unknown fields alone (as the API server does without strict field
 * validation, dropping a misspelled field without a word). Each manifest is type-checked as an
 * object literal of its kind's model type instead: TypeScript refuses a property the type does
 * not have, at any depth, and a value of the wrong type. Returns the faults.
 */
function fieldFaults(docs: readonly Manifest[]): string[] {
  const imports = [...MODEL_TYPES.values()].map(({ module, type }) => `import type { ${type} } from '${module}';`);
  const lines = docs.map((doc, i) => {
    const model = MODEL_TYPES.get(`${doc.apiVersion} ${doc.kind}`);
    return model
      ? `export const m${i}: ${model.type} = ${JSON.stringify(doc)};`
      : `export const m${i}: never = 'no model type for ${doc.apiVersion} ${doc.kind}';`;
  });
  const source = [...imports, ...lines].join('\n');
  // A module beside this test, so that its imports resolve through the project's node_modules.
  const file = path.join(REPO_ROOT, 'test', 'platform', '__rendered-manifests__.ts');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2023.d.ts'],
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const readFile = host.readFile.bind(host);
  host.getSourceFile = (name, language, ...rest) =>
    name === file ? ts.createSourceFile(name, source, language) : getSourceFile(name, language, ...rest);
  host.fileExists = (name) => name === file || fileExists(name);
  host.readFile = (name) => (name === file ? source : readFile(name));
  const program = ts.createProgram([file], options, host);
  const sourceFile = program.getSourceFile(file);
  if (!sourceFile) throw new Error('the manifests did not load into the type checker');
  return [...program.getSyntacticDiagnostics(sourceFile), ...program.getSemanticDiagnostics(sourceFile)].map((diagnostic) => {
    const line = diagnostic.start === undefined ? -1 : sourceFile.getLineAndCharacterOfPosition(diagnostic.start).line - imports.length;
    const doc = docs[line];
    // The text the fault points at: the property, or the value, in the manifest's JSON.
    const at = diagnostic.start === undefined ? '' : ` at ${source.slice(diagnostic.start, diagnostic.start + (diagnostic.length ?? 0))}`;
    return `${doc ? describeManifest(doc) : 'manifests'}${at}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')}`;
  });
}

/** Every variable platform/runtime/config.ts reads (`env.NAME`, and the names it hands its readers), and SERVICE (scripts/serve.ts). */
function configVariables(): ReadonlySet<string> {
  const source = readFileSync(path.join(REPO_ROOT, 'platform', 'runtime', 'config.ts'), 'utf8');
  const names = new Set(['SERVICE']);
  for (const match of source.matchAll(/env\.([A-Z][A-Z0-9_]*)|\w\('([A-Z][A-Z0-9_]*)'/g)) names.add(match[1] ?? match[2]!);
  return names;
}

const made = () => randomBytes(32).toString('hex');
/** Secrets made up for this run, so that whatever a Secret holds can be traced to the values given. */
const given = {
  INTERNAL_SECRET: made(),
  JWT_SECRET: made(),
  SERVICE_KEYS: `operator=${made()}`,
  MONGODB_URI: `mongodb://banking:${made()}@mongo-0.mongo,mongo-1.mongo,mongo-2.mongo/?replicaSet=rs0`,
  REDIS_URL: `redis://:${made()}@redis-master:6379`,
  SMTP_URL: `smtp://mailer:${made()}@smtp.example.com:587`,
};
const IMAGE = { repository: 'registry.example.com/banking-graph', tag: '2026.11.1' };
/** What a user installing to production gives the chart. */
const productionValues = {
  image: IMAGE,
  secrets: { internalSecret: given.INTERNAL_SECRET, jwtSecret: given.JWT_SECRET, serviceKeys: given.SERVICE_KEYS },
  mongodb: { uri: given.MONGODB_URI },
  redis: { url: given.REDIS_URL },
  messages: { smtpUrl: given.SMTP_URL, smsWebhookUrl: 'https://sms.example.com/send' },
  config: { restPublicUrl: 'https://api.example.com', corsOrigins: 'https://app.example.com', trustProxy: true },
};
/** The same with the secrets in a Secret of the user's own. */
const existingSecretValues = {
  image: IMAGE,
  secrets: { existingSecret: 'banking-graph-credentials' },
  messages: { smsWebhookUrl: 'https://sms.example.com/send' },
};

describe('the Helm chart', () => {
  let helm = '';
  let work = '';
  let renders = 0;
  let production: Manifest[] = [];
  let productionText = '';

  /** Runs `helm template` with these values; the status is helm's exit code. */
  const template = async (values: unknown): Promise<{ status: number; stdout: string; stderr: string }> => {
    // A file, not --set: --set splits values at commas, which URIs and SERVICE_KEYS contain.
    const file = path.join(work, `values-${++renders}.json`);
    await writeFile(file, JSON.stringify(values));
    return new Promise((resolve) => {
      execFile(
        helm,
        ['template', RELEASE, CHART, '--namespace', NAMESPACE, '--kube-version', KUBE_VERSION, '--values', file],
        { maxBuffer: 16 * 1024 * 1024 },
        (error, stdout, stderr) => {
          resolve({ status: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
        },
      );
    });
  };
  const render = async (values: unknown): Promise<{ manifests: Manifest[]; text: string }> => {
    const { status, stdout, stderr } = await template(values);
    if (status !== 0) throw new Error(`helm template failed: ${stderr}`);
    return { manifests: parseManifests(stdout), text: stdout };
  };

  beforeAll(async () => {
    helm = await ensureHelm({ helmBin: process.env.HELM_BIN });
    work = await mkdtemp(path.join(tmpdir(), 'banking-graph-chart-'));
    ({ manifests: production, text: productionText } = await render(productionValues));
  }, 20 * 60_000);
  afterAll(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  });

  const name = (service: ServiceName) => `${RELEASE}-banking-graph-${service}`;
  const of = <T>(docs: readonly Manifest[], guard: (value: unknown) => value is T): T[] =>
    docs.filter((doc): doc is Manifest & T => guard(doc));
  const deploymentOf = (docs: readonly Manifest[], service: ServiceName): IDeployment => {
    const found = of(docs, Deployment.is).find((d) => d.metadata?.name === name(service));
    if (!found) throw new Error(`no Deployment for ${service}`);
    return found;
  };
  const containerOf = (deployment: IDeployment): IContainer => {
    const containers = deployment.spec?.template.spec?.containers ?? [];
    expect(containers).toHaveLength(1);
    return containers[0]!;
  };
  /** Whether every label of the selector is on the object. */
  const selects = (selector: Record<string, string> | undefined, labels: Record<string, string> | undefined) =>
    selector !== undefined && Object.keys(selector).length > 0 && Object.entries(selector).every(([key, value]) => labels?.[key] === value);
  const podLabels = (deployment: IDeployment) => deployment.spec?.template.metadata?.labels;

  /**
   * The environment a container starts with: plain values, and Secret references resolved from
   * `secretData` (the rendered Secret's, or the user's own); an optional reference to an absent key stays unset.
   */
  const environment = (container: IContainer, secretName: string, secretData: Readonly<Record<string, string>>): Record<string, string> => {
    const env: Record<string, string> = {};
    for (const entry of container.env ?? []) {
      const ref = entry.valueFrom?.secretKeyRef;
      if (ref) {
        expect(ref.name, `${entry.name} comes from the release's Secret`).toBe(secretName);
        const value = Object.hasOwn(secretData, ref.key) ? secretData[ref.key] : undefined;
        if (value === undefined) expect(ref.optional, `${entry.name} is optional if the Secret may lack it`).toBe(true);
        else env[entry.name] = value;
      } else {
        expect(entry.valueFrom, `${entry.name} has a value or a Secret reference`).toBeUndefined();
        env[entry.name] = entry.value ?? '';
      }
    }
    return env;
  };
  const secretOf = (docs: readonly Manifest[]): Record<string, string> => {
    const secrets = of(docs, Secret.is);
    expect(secrets).toHaveLength(1);
    return Object.fromEntries(
      Object.entries(secrets[0]!.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]),
    );
  };

  describe('renders manifests that the Kubernetes API schemas accept', () => {
    it('with secrets in the values, and with a Secret of the user', async () => {
      const withExisting = (await render(existingSecretValues)).manifests;
      for (const docs of [production, withExisting]) {
        expect(docs.length).toBeGreaterThan(0);
        expect({ schema: schemaFaults(docs), fields: fieldFaults(docs) }).toEqual({ schema: [], fields: [] });
      }
      const kinds = production.map((doc) => doc.kind).sort();
      expect(new Set(kinds)).toEqual(
        new Set(['Deployment', 'Service', 'Secret', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'ServiceMonitor']),
      );
      expect(withExisting.some((doc) => doc.kind === 'Secret')).toBe(false);
    }, 60_000);

    it('and refuses a manifest with a misspelled field, a wrong type or a missing required field', () => {
      const deployment = deploymentOf(production, 'gateway');
      const variant = (
        change: (copy: { spec: { template: { spec: { containers: Array<Record<string, unknown>> } } } }) => void,
      ): Manifest[] => {
        const copy = structuredClone(deployment) as unknown as {
          spec: { template: { spec: { containers: Array<Record<string, unknown>> } } };
        };
        change(copy);
        return [copy as unknown as Manifest];
      };
      const misspelled = variant((copy) => {
        copy.spec.template.spec.containers[0]!.readinessProbes = copy.spec.template.spec.containers[0]!.readinessProbe;
      });
      expect(fieldFaults(misspelled).join('\n')).toMatch(/readinessProbes/);
      const wrongType = variant((copy) => {
        copy.spec.template.spec.containers[0]!.ports = [{ name: 'http', containerPort: '4000' }];
      });
      expect(schemaFaults(wrongType).join('\n')).toMatch(/containerPort must be integer/);
      expect(fieldFaults(wrongType).join('\n')).toMatch(/containerPort/);
      const unnamed = variant((copy) => {
        delete copy.spec.template.spec.containers[0]!.name;
      });
      expect(schemaFaults(unnamed).join('\n')).toMatch(/required property name/);
      expect(schemaFaults([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }])).toEqual([
        'ConfigMap x: no schema for v1 ConfigMap',
      ]);
    }, 60_000);
  });

  it('gives each of the six services a Deployment of the image, with SERVICE naming it, and a Service for its ports', () => {
    const services = of(production, Service.is);
    expect(of(production, Deployment.is)).toHaveLength(SERVICES.length);
    expect(services).toHaveLength(SERVICES.length);
    for (const service of SERVICES) {
      const deployment = deploymentOf(production, service);
      const container = containerOf(deployment);
      expect(container.image).toBe(`${IMAGE.repository}:${IMAGE.tag}`);
      expect(container.env?.find((e) => e.name === 'SERVICE')?.value).toBe(service);
      expect(deployment.spec?.selector.matchLabels, service).toBeDefined();
      expect(selects(deployment.spec?.selector.matchLabels, podLabels(deployment))).toBe(true);
      const ports = container.ports ?? [];
      expect(ports.map((p) => p.name)).toEqual(['http', 'metrics']);
      const own = services.find((s) => s.metadata?.name === name(service));
      expect(own, `Service ${name(service)}`).toBeDefined();
      // The Service reaches this service's pods and no other's.
      for (const other of SERVICES)
        expect(selects(own?.spec?.selector, podLabels(deploymentOf(production, other)))).toBe(other === service);
      expect(own?.spec?.ports).toEqual([
        expect.objectContaining({ name: 'http', port: ports[0]!.containerPort, targetPort: 'http' }),
        expect.objectContaining({ name: 'metrics', port: ports[1]!.containerPort, targetPort: 'metrics' }),
      ]);
    }
  });

  it('probes /ready for readiness and /health for liveness on the service port, and requests CPU and memory', () => {
    for (const service of SERVICES) {
      const container = containerOf(deploymentOf(production, service));
      expect(container.readinessProbe?.httpGet, service).toEqual({ path: '/ready', port: 'http' });
      expect(container.livenessProbe?.httpGet, service).toEqual({ path: '/health', port: 'http' });
      expect(container.resources?.requests?.cpu, service).toBeTruthy();
      expect(container.resources?.requests?.memory, service).toBeTruthy();
      expect(container.resources?.limits?.memory, service).toBeTruthy();
    }
  });

  it('runs every container as a non-root user on a read-only root filesystem, with no privilege, token or service links', () => {
    for (const service of SERVICES) {
      const pod = deploymentOf(production, service).spec?.template.spec;
      const container = containerOf(deploymentOf(production, service));
      expect(pod?.securityContext?.runAsNonRoot, service).toBe(true);
      // The image's user is a name (node); the kubelet can tell it is not root only from a number.
      expect(pod?.securityContext?.runAsUser, service).toBeGreaterThan(0);
      expect(pod?.securityContext?.seccompProfile?.type).toBe('RuntimeDefault');
      expect(container.securityContext).toMatchObject({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
      expect(container.volumeMounts).toEqual([{ name: 'tmp', mountPath: '/tmp' }]);
      expect(pod?.automountServiceAccountToken).toBe(false);
      expect(pod?.enableServiceLinks).toBe(false);
    }
  });

  it("sets only variables the services read, and each service's configuration loader accepts what it is given", () => {
    const known = configVariables();
    const secretData = secretOf(production);
    const configs = new Map<ServiceName, Config>();
    for (const service of SERVICES) {
      const container = containerOf(deploymentOf(production, service));
      const env = environment(container, `${RELEASE}-banking-graph`, secretData);
      for (const variable of Object.keys(env))
        expect(known.has(variable), `${service} sets ${variable}, which platform/runtime/config.ts does not read`).toBe(true);
      expect(env.NODE_ENV).toBe('production');
      const config = loadConfig(env);
      configs.set(service, config);
      // What scripts/serve.ts refuses to start without.
      expect(config.internalSecret).toBe(given.INTERNAL_SECRET);
      expect(config.internalSecretGenerated).toBe(false);
      expect(config.redisUrl).toBe(service === 'rest-adapter' ? undefined : given.REDIS_URL);
      expect(config.mongodbUri).toBe((SUBGRAPH_NAMES as readonly string[]).includes(service) ? given.MONGODB_URI : undefined);
      const port = service === 'gateway' ? config.ports.gateway : service === 'rest-adapter' ? config.ports.rest : config.ports[service];
      expect(container.ports?.[0]?.containerPort).toBe(port);
      expect(config.host).toBe('0.0.0.0');
    }
    // Each service is found at its Service's name and port.
    const url = (service: ServiceName) => {
      const own = of(production, Service.is).find((s) => s.metadata?.name === name(service));
      return `http://${name(service)}:${own?.spec?.ports?.[0]?.port ?? 0}/graphql`;
    };
    for (const subgraph of SUBGRAPH_NAMES) expect(configs.get('gateway')?.subgraphUrls[subgraph]).toBe(url(subgraph));
    for (const service of SERVICES.filter((s) => s !== 'gateway')) expect(configs.get(service)?.gatewayUrl, service).toBe(url('gateway'));
    // The user subgraph refuses to start in production without a way to send codes.
    const user = configs.get('user');
    expect(Boolean(user?.smtpUrl && user.smsWebhookUrl) || user?.outboxChosen).toBe(true);
    // Merchant and customer JWTs: the gateway and payments agree; SERVICE_KEYS reach the gateway.
    expect(configs.get('payments')?.jwtSecret).toBe(given.JWT_SECRET);
    expect(configs.get('gateway')?.jwtSecret).toBe(given.JWT_SECRET);
    expect(configs.get('gateway')?.serviceKeyHashes.size).toBe(1);
  });

  it('gives each service a grace period longer than its drain plus the 5 s in which connections finish', () => {
    for (const service of SERVICES) {
      const deployment = deploymentOf(production, service);
      const drain = Number(containerOf(deployment).env?.find((e) => e.name === 'DRAIN_SECONDS')?.value);
      expect(drain, service).toBe(5);
      expect(deployment.spec?.template.spec?.terminationGracePeriodSeconds, service).toBeGreaterThan(drain + 5);
    }
  });

  it('autoscales the gateway and the REST adapter, and leaves their replica count to the autoscaler', () => {
    const autoscalers: IHorizontalPodAutoscaler[] = of(production, HorizontalPodAutoscaler.is);
    expect(autoscalers.map((hpa) => hpa.spec.scaleTargetRef.name).sort()).toEqual([name('gateway'), name('rest-adapter')]);
    for (const hpa of autoscalers) {
      expect(hpa.spec.scaleTargetRef).toMatchObject({ apiVersion: 'apps/v1', kind: 'Deployment' });
      expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
      expect(hpa.spec.metrics?.[0]?.resource?.name).toBe('cpu');
    }
    expect(deploymentOf(production, 'gateway').spec?.replicas).toBeUndefined();
    expect(deploymentOf(production, 'rest-adapter').spec?.replicas).toBeUndefined();
    expect(deploymentOf(production, 'user').spec?.replicas).toBe(2);
  });

  it('keeps compliance to one process, and refuses a second', async () => {
    const compliance = deploymentOf(production, 'compliance');
    expect(compliance.spec?.replicas).toBe(1);
    expect(compliance.spec?.strategy?.type).toBe('Recreate');
    const refused = await template({ ...productionValues, services: { compliance: { replicas: 2 } } });
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toMatch(/services\.compliance\.replicas must be 1/);
  });

  it('gives each service a PodDisruptionBudget over its own pods', () => {
    const budgets: IPodDisruptionBudget[] = of(production, PodDisruptionBudget.is);
    expect(budgets).toHaveLength(SERVICES.length);
    for (const service of SERVICES) {
      const budget = budgets.find((b) => b.metadata?.name === name(service));
      expect(budget?.spec?.maxUnavailable ?? budget?.spec?.minAvailable, service).toBeDefined();
      for (const other of SERVICES)
        expect(selects(budget?.spec?.selector?.matchLabels, podLabels(deploymentOf(production, other)))).toBe(other === service);
    }
  });

  it('scrapes GET /metrics on the metrics port of every service with one ServiceMonitor, never on the http port', async () => {
    const monitors: IServiceMonitor[] = of(production, ServiceMonitor.is);
    expect(monitors).toHaveLength(1);
    const monitor = monitors[0]!;
    // honorLabels keeps the services' own `service` label, which the dashboard reads.
    expect(monitor.spec.endpoints).toEqual([expect.objectContaining({ port: 'metrics', path: '/metrics', honorLabels: true })]);
    const services: IService[] = of(production, Service.is);
    for (const service of services) {
      expect(selects(monitor.spec.selector.matchLabels, service.metadata?.labels), service.metadata?.name).toBe(true);
      expect(
        service.spec?.ports?.find((p) => p.name === 'metrics'),
        service.metadata?.name,
      ).toMatchObject({ port: 9464, targetPort: 'metrics' });
    }
    // The container's metrics port is the one METRICS_PORT sets, apart from its http port.
    for (const service of SERVICES) {
      const container = containerOf(deploymentOf(production, service));
      expect(container.env?.find((e) => e.name === 'METRICS_PORT')?.value, service).toBe('9464');
      expect(container.ports?.find((p) => p.name === 'metrics')?.containerPort, service).toBe(9464);
      expect(container.ports?.find((p) => p.name === 'http')?.containerPort, service).not.toBe(9464);
    }
    const clash = await template({ ...productionValues, metrics: { port: 4000 } });
    expect(clash.status).not.toBe(0);
    expect(clash.stderr).toMatch(/metrics\.port must differ from every service's port \(gateway listens on 4000\)/);
  });

  describe('secrets', () => {
    it('has no secret of its own: every secret value in values.yaml is empty', () => {
      const values = parse(readFileSync(path.join(CHART, 'values.yaml'), 'utf8')) as {
        secrets: Record<string, unknown>;
        mongodb: { uri: unknown };
        redis: { url: unknown };
        messages: { smtpUrl: unknown };
      };
      expect(values.secrets).toEqual({ existingSecret: '', internalSecret: '', jwtSecret: '', serviceKeys: '' });
      expect([values.mongodb.uri, values.redis.url, values.messages.smtpUrl]).toEqual(['', '', '']);
    });

    it('refuses to render without INTERNAL_SECRET, with a short one, or with secrets given twice', async () => {
      const missing = await template({
        image: IMAGE,
        mongodb: { uri: given.MONGODB_URI },
        redis: { url: given.REDIS_URL },
        messages: { outboxDir: '/tmp/outbox' },
      });
      expect(missing.status).not.toBe(0);
      expect(missing.stderr).toMatch(/INTERNAL_SECRET/);
      const short = await template({ ...productionValues, secrets: { internalSecret: 'x'.repeat(31) } });
      expect(short.status).not.toBe(0);
      expect(short.stderr).toMatch(/at least 32 characters/);
      const twice = await template({ ...existingSecretValues, secrets: { existingSecret: 'mine', internalSecret: given.INTERNAL_SECRET } });
      expect(twice.status).not.toBe(0);
      expect(twice.stderr).toMatch(/existingSecret is set/);
      const noDatabase = await template({ ...productionValues, mongodb: { uri: '' } });
      expect(noDatabase.stderr).toMatch(/MONGODB_URI/);
    });

    it('holds exactly the values given, and no secret appears outside the Secret', () => {
      expect(secretOf(production)).toEqual(given);
      // The Secret is base64: a secret seen in plain text was put somewhere else.
      for (const value of Object.values(given)) expect(productionText.includes(value)).toBe(false);
    });

    it("reads them from the user's own Secret when one is named", async () => {
      const { manifests } = await render(existingSecretValues);
      const userSecret = { ...given };
      for (const service of SERVICES) {
        const env = environment(containerOf(deploymentOf(manifests, service)), 'banking-graph-credentials', userSecret);
        expect(loadConfig(env).internalSecret, service).toBe(given.INTERNAL_SECRET);
      }
    });
  });
});
