import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The Node.js flags of a subgraph's process, and of every service in one process: `npm start`,
 * `npm run start:service`, the Docker image (per service, see `nodeFlagsOf`) and the stack of
 * `npm run bench` and `npm run bench:authorization` (test/platform/platform.test.ts checks them).
 *
 * A young generation of 64 MiB semi-spaces instead of V8's 16: a GraphQL request allocates much
 * that dies within it, and with V8's default the stack scavenges so often at full load that what is
 * still in flight is promoted to the old generation. The cost is memory: the young generation
 * stays committed at its largest (docs/performance.md).
 */
export const SERVICE_NODE_FLAGS = ['--max-semi-space-size=64'] as const;

/**
 * The flags of one service's own process. The gateway and the REST adapter run with V8's default
 * young generation: they are the services a deployment runs most replicas of, so their memory
 * counts the most, and their share of a request's CPU is the smaller one.
 */
export function nodeFlagsOf(service: string): readonly string[] {
  return service === 'gateway' || service === 'rest-adapter' ? [] : SERVICE_NODE_FLAGS;
}

// `node scripts/node-flags.js <service>` prints that service's flags (the image's command uses it).
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  console.log(nodeFlagsOf(process.argv[2] ?? '').join(' '));
