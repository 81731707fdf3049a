// `npx tsx bench/flame-graph.ts <file.cpuprofile> <out.svg> [title]`: a flame graph of a V8 CPU
// profile (`node --cpu-prof`) as a self-contained SVG: each frame as wide as the samples under it,
// callers below callees, coloured by the package (or project folder) the function is in. Idle time
// is left out, so the widths are shares of the time the process was busy.
import { readFileSync, writeFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Frame {
  name: string;
  place: string;
  total: number;
  children: Frame[];
}

const [input, output, title = 'CPU profile'] = process.argv.slice(2);
if (!input || !output) throw new Error('usage: flame-graph.ts <file.cpuprofile> <out.svg> [title]');
const profile = JSON.parse(readFileSync(input, 'utf8')) as { nodes: ProfileNode[]; samples: number[] };
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfSamples = new Map<number, number>();
for (const id of profile.samples) selfSamples.set(id, (selfSamples.get(id) ?? 0) + 1);

/** Where a function lives: its npm package, a `node:` module, or the project's folder. */
const placeOf = (url: string): string => {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  if (pkg) return pkg;
  if (url.startsWith('node:')) return 'node';
  return /\/(?:dist\/)?((?:platform|gateway|subgraphs|rest-adapter|scripts|bench)\/[^/]+)/.exec(url)?.[1] ?? (url ? 'other' : 'V8');
};

const LEFT_OUT = new Set(['(idle)', '(root)']);
const frameOf = (node: ProfileNode): Frame => {
  const children = (node.children ?? [])
    .map((id) => byId.get(id)!)
    .filter((child) => !LEFT_OUT.has(child.callFrame.functionName))
    .map(frameOf);
  const total = (selfSamples.get(node.id) ?? 0) + children.reduce((sum, child) => sum + child.total, 0);
  const { functionName, url, lineNumber } = node.callFrame;
  const file = url.split('/').at(-1) ?? '';
  return {
    name: `${functionName || '(anonymous)'}${file ? ` ${file}:${lineNumber + 1}` : ''}`,
    place: placeOf(url),
    total,
    children: children.filter((child) => child.total > 0).sort((a, b) => b.total - a.total),
  };
};
const root = frameOf(profile.nodes[0]!);
root.name = 'all busy samples';

const WIDTH = 1600;
const ROW = 17;
const MIN_WIDTH = 0.4;
const depthOf = (frame: Frame): number => 1 + Math.max(0, ...frame.children.map(depthOf));
const depth = depthOf(root);
const height = depth * ROW + 40;
const scale = WIDTH / root.total;

/** A stable colour per place: the same package reads the same in every graph. */
const colourOf = (place: string): string => {
  let hash = 0;
  for (const char of place) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  const project = /^(platform|gateway|subgraphs|rest-adapter)\//.test(place);
  return project
    ? `hsl(${200 + (hash % 40)}, 60%, ${62 + (hash % 14)}%)`
    : `hsl(${(hash % 50) + 5}, ${70 + (hash % 20)}%, ${58 + (hash % 16)}%)`;
};
const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const rects: string[] = [];
const draw = (frame: Frame, x: number, level: number): void => {
  const width = frame.total * scale;
  if (width < MIN_WIDTH) return;
  const y = height - 20 - (level + 1) * ROW;
  const share = ((frame.total / root.total) * 100).toFixed(1);
  const label = `${frame.name} [${frame.place}] ${share}%`;
  const chars = Math.floor((width - 6) / 6.5);
  const text = chars >= 3 ? (label.length > chars ? `${label.slice(0, chars - 1)}…` : label) : '';
  rects.push(
    `<g><title>${escape(label)}</title><rect x="${x.toFixed(2)}" y="${y}" width="${width.toFixed(2)}" height="${ROW - 1}" fill="${colourOf(frame.place)}" rx="1"/>` +
      (text ? `<text x="${(x + 3).toFixed(2)}" y="${y + 12}">${escape(text)}</text>` : '') +
      '</g>',
  );
  let childX = x;
  for (const child of frame.children) {
    draw(child, childX, level + 1);
    childX += child.total * scale;
  }
};
draw(root, 0, 0);

writeFileSync(
  output,
  `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="monospace" font-size="11">
<rect width="100%" height="100%" fill="#fff"/>
<text x="4" y="14" font-size="13">${escape(title)}: ${root.total} busy samples; hover a frame for its name and share</text>
${rects.join('\n')}
</svg>
`,
);
console.log(`${output}: ${rects.length} frames, ${root.total} busy samples, ${depth} deep`);
