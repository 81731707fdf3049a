// `npx tsx bench/profile-summary.ts <file.cpuprofile> [n]`: the functions with the most self time,
// and the packages (or project folders) the samples fell in.
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
const profile = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as { nodes: Node[]; samples: number[] };
const top = Number(process.argv[3] ?? 25);
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const self = new Map<number, number>();
for (const id of profile.samples) self.set(id, (self.get(id) ?? 0) + 1);
const total = profile.samples.length;

const where = (url: string) => {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  if (pkg) return pkg;
  if (url.startsWith('node:')) return url;
  const local = /\/work\/[^/]+\/([^/]+\/[^/]+)/.exec(url)?.[1];
  return local ?? (url || '(native/idle)');
};
const functions = new Map<string, number>();
const places = new Map<string, number>();
for (const [id, count] of self) {
  const frame = byId.get(id)!.callFrame;
  const name = `${frame.functionName || '(anonymous)'} ${where(frame.url)}:${frame.lineNumber + 1}`;
  functions.set(name, (functions.get(name) ?? 0) + count);
  places.set(where(frame.url), (places.get(where(frame.url)) ?? 0) + count);
}
const show = (title: string, entries: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [name, count] of [...entries].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`${((100 * count) / total).toFixed(1).padStart(5)}%  ${name}`);
};
show('self time by place', places);
show('self time by function', functions);
