// `npx tsx bench/profile-categories.ts <gateway.cpuprofile>`: where a gateway's busy time goes, by
// the part of the request it serves. Each sample goes to the first category its stack meets from
// the innermost frame out, so a socket write counts as the caller's whose stack it runs in (under
// the subgraph fetch, the fetch's); Node's stream internals are looked through. Start-up (module
// loading) is left out, so shares are of the time spent serving.
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

const CATEGORIES: ReadonlyArray<readonly [string, RegExp]> = [
  ['start-up (left out)', /node:internal\/modules\/|node:internal\/bootstrap/],
  [
    'subgraph fetches: request, HTTP client, answer parsed',
    /gateway\/src\/subgraph-fetch|platform\/http\/(client|transport)|node:_http_client|node:_http_agent/,
  ],
  ['rate-limit counts in Redis', /ioredis|rate-limiter-flexible|gateway\/src\/rate-limits/],
  ['credentials and session reads', /gateway\/src\/authenticate|platform\/security/],
  [
    "query plan execution and result shaping (gateway/src/execution, Apollo's planner)",
    /gateway\/src\/execution\/|@apollo\/(gateway|federation-internals|query-planner|query-graphs)/,
  ],
  [
    'our checks and plugins',
    /gateway\/src\/(operation-limits|trusted-documents|document-limits|idempotency|service-scope)|platform\/graphql/,
  ],
  [
    'request pipeline: parse, validate, serialize (gateway/src/pipeline, graphql)',
    /gateway\/src\/pipeline|@apollo\/server|node_modules\/graphql\//,
  ],
  ['metrics and trace context', /prom-client|@opentelemetry|platform\/telemetry/],
  ['HTTP server: requests read, answers written', /node:_http_server|platform\/http\/server|platform\/graphql\/apollo-http/],
];

const profile = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as { nodes: ProfileNode[]; samples: number[] };
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
const counts = new Map<string, number>();
for (const id of profile.samples) {
  const leaf = byId.get(id)!.callFrame.functionName;
  if (leaf === '(idle)') continue;
  let category = leaf === '(garbage collector)' ? 'garbage collection' : 'other: event loop, promises, V8, streams not traced to a caller';
  if (leaf !== '(garbage collector)')
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const url = byId.get(at)!.callFrame.url;
      const found = CATEGORIES.find(([, pattern]) => pattern.test(url));
      if (found) {
        category = found[0];
        break;
      }
    }
  counts.set(category, (counts.get(category) ?? 0) + 1);
}
const serving = [...counts].filter(([name]) => name !== 'start-up (left out)').reduce((sum, [, n]) => sum + n, 0);
for (const [name, n] of [...counts].sort((a, b) => b[1] - a[1]))
  console.log(`${name === 'start-up (left out)' ? '   -  ' : `${((n / serving) * 100).toFixed(1).padStart(5)}%`}  ${name} (${n} samples)`);
