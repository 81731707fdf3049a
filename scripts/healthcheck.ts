// `node scripts/healthcheck.js [ready|health]`: the image's health check. Asks the service that
// SERVICE names, on this host, for /ready (default) or /health, and exits 0 on a 200.
import { loadConfig, SUBGRAPH_NAMES, type Config } from '../platform/runtime/config.js';

const probe = process.argv[2] === 'health' ? 'health' : 'ready';
const service = process.env.SERVICE ?? '';
const config: Config = loadConfig();
const portOf = (name: string): number | null => {
  if (name === 'gateway') return config.ports.gateway;
  if (name === 'rest-adapter') return config.ports.rest;
  const subgraph = SUBGRAPH_NAMES.find((candidate) => candidate === name);
  return subgraph ? config.ports[subgraph] : null;
};
const port = portOf(service);
if (port === null) {
  console.error(`SERVICE must name a service (got "${service}")`);
  process.exit(1);
}
const ok = await fetch(`http://127.0.0.1:${port}/${probe}`, { signal: AbortSignal.timeout(2000) }).then(
  (answer) => answer.ok,
  () => false,
);
process.exit(ok ? 0 : 1);
