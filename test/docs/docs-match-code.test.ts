import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Docs that match the code: every repository path, environment variable and npm script
 * that README.md and docs/**\/*.md name exists. A renamed file, a removed setting or a dropped
 * script fails here with the doc, the line and the missing thing, rather than misleading a reader.
 *
 * What counts as a reference:
 * - a path: a backticked span whose first segment is a top-level entry of the repository
 *   (`platform/messaging/outbox.ts`, `gateway/src/`, `schema/*.graphql`, `subgraphs/<name>/src`),
 *   read from the repository root; and every relative link target (`[Cards](cards.md#funds)`),
 *   read from the doc's folder, with its `#anchor` checked against the target's headings;
 * - an environment variable: a backticked UPPER_SNAKE name (or `NAME=value`), or a name assigned at
 *   the start of a code block's line (`INTERNAL_SECRET=... docker compose up`). It passes when the
 *   code reads it (`platform/runtime/config.ts`, `process.env`, `.env.example`). A name the code
 *   does not read passes only when it is no setting: the doc does not present it as one (no
 *   `NAME=value`, no "environment"/"variable"/"setting"/… next to it) and the code names it
 *   otherwise (an error code such as `VALIDATION_FAILED`, a constant);
 * - an npm script: `npm run X` (with `-s`/`--silent`), `npm start`, `npm test`, in prose or in
 *   code blocks: `X` is a script of package.json.
 *
 * Not checked: relative file names that lean on the surrounding prose (`context.ts`, `routes/`),
 * a root file named in backticks without a link (`Dockerfile`), paths inside fenced code blocks,
 * a one-word setting without `=` (`HOST`), URLs, and what a sentence claims about the code.
 * CHANGELOG.md is left out: its released sections may name what has since gone.
 */

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');

type Kind = 'path' | 'link' | 'env' | 'script';

interface Reference {
  kind: Kind;
  /** The name as the doc writes it (a path, a link target, a variable, a script). */
  name: string;
  /** 1-based line of the doc. */
  line: number;
  /** For `env`: whether the doc presents the name as a setting. */
  asSetting: boolean;
}

// ---- The extractor: markdown text in, references out (no file system). ----

/** Words near a name that make it a setting, not some other UPPER_SNAKE identifier. */
const SETTING_CUES = /environment|\benv\b|\.env|variable|setting|\bset to\b|\bunset\b|\bexport\b/i;
const UPPER_SNAKE = /^([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?:=(.*))?$/;
const ASSIGNED_WORD = /^([A-Z][A-Z0-9]+)=(.*)$/;
const NPM_SCRIPT = /\bnpm\s+run(?:\s+(?:-s|--silent|--if-present))*\s+([A-Za-z0-9:_.-]+)|\bnpm\s+(start|test)\b/g;

function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** The text with fenced code blocks blanked out (same length, same lines), and the fences' own text. */
function splitFences(markdown: string): { prose: string; fences: string } {
  const lines = markdown.split('\n');
  let inFence = false;
  const prose: string[] = [];
  const fences: string[] = [];
  for (const line of lines) {
    const fence = /^\s*(```|~~~)/.test(line);
    if (fence) inFence = !inFence;
    const code = fence || inFence;
    prose.push(code ? ' '.repeat(line.length) : line);
    fences.push(code && !fence ? line : ' '.repeat(line.length));
  }
  return { prose: prose.join('\n'), fences: fences.join('\n') };
}

function extractReferences(markdown: string, topLevel: ReadonlySet<string>): Reference[] {
  const { prose, fences } = splitFences(markdown);
  const refs: Reference[] = [];

  // Inline code spans: within a paragraph, possibly across one line break.
  for (const match of prose.matchAll(/`([^`]+)`/g)) {
    const raw = match[1]!;
    if (raw.includes('\n\n')) continue;
    const span = raw.replace(/\s+/g, ' ').trim();
    const line = lineAt(prose, match.index + 1 + raw.search(/\S/));
    const lineText = prose.split('\n')[line - 1] ?? '';
    const env = UPPER_SNAKE.exec(span) ?? ASSIGNED_WORD.exec(span);
    if (env) {
      // The clause around the name: up to 60 characters either side, not past a `;` or a sentence's end.
      const spanAt = lineText.indexOf(raw.split('\n')[0]!);
      const before = lineText
        .slice(Math.max(0, spanAt - 60), spanAt)
        .split(/[;:]\s|\.\s/)
        .pop()!;
      const after = lineText.slice(spanAt + raw.length, spanAt + raw.length + 60).split(/[;:]\s|\.\s/)[0]!;
      const near = before + after;
      refs.push({ kind: 'env', name: env[1]!, line, asSetting: env[2] !== undefined || SETTING_CUES.test(near) });
      continue;
    }
    if (/\s|:\/\/|^\//.test(span)) continue;
    const first = span.split('/')[0]!;
    if (span.includes('/') && topLevel.has(first)) refs.push({ kind: 'path', name: span, line, asSetting: false });
  }

  // Links and images: [text](target) with a relative target.
  for (const match of prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const target = match[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    refs.push({ kind: 'link', name: target, line: lineAt(prose, match.index), asSetting: false });
  }

  // Settings assigned at the start of a code block's line (`INTERNAL_SECRET=... docker compose up`, `export NAME=...`).
  for (const match of fences.matchAll(/^[ \t]*(?:export[ \t]+)?((?:[A-Z][A-Z0-9_]*=\S*[ \t]+)*[A-Z][A-Z0-9_]*=)/gm)) {
    const line = lineAt(fences, match.index);
    for (const name of match[1]!.matchAll(/([A-Z][A-Z0-9_]*)=/g)) refs.push({ kind: 'env', name: name[1]!, line, asSetting: true });
  }

  // npm scripts, in prose and in code blocks alike.
  for (const text of [prose, fences]) {
    for (const match of text.matchAll(NPM_SCRIPT)) {
      const name = match[1] ?? match[2]!;
      refs.push({ kind: 'script', name, line: lineAt(text, match.index), asSetting: false });
    }
  }
  return refs.sort((a, b) => a.line - b.line);
}

/** GitHub's anchors of a markdown file's headings (lower case, punctuation dropped, spaces to hyphens, repeats numbered). */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of splitFences(markdown).prose.split('\n')) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const text = heading[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

// ---- What the repository holds. ----

/** Top-level entries a path may start with; build outputs and local state are not the repository's. */
const NOT_THE_REPOSITORY = new Set(['node_modules', '.git', 'dist', '.data', '.scratch']);
/** Where the services' settings are read (`loadConfig`). */
const CONFIG_FILE = 'platform/runtime/config.ts';
const CODE_ROOTS = [
  'platform',
  'gateway',
  'subgraphs',
  'rest-adapter',
  'scripts',
  'bench',
  'test',
  'web',
  'schema',
  'specs',
  'deploy',
  '.ci',
];
const CODE_FILE = /\.(ts|tsx|js|mjs|cjs|json|graphql|ya?ml|tpl|sh|go|md|txt|env)$|^(Dockerfile|run)$/;

function topLevelEntries(): Set<string> {
  return new Set(readdirSync(ROOT).filter((name) => !NOT_THE_REPOSITORY.has(name)));
}

function* filesUnder(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (NOT_THE_REPOSITORY.has(entry.name) || entry.name === '__generated__') continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* filesUnder(full);
    else if (CODE_FILE.test(entry.name)) yield full;
  }
}

function docFiles(): string[] {
  const docs = [...filesUnder(path.join(ROOT, 'docs'))].filter((file) => file.endsWith('.md'));
  return [path.join(ROOT, 'README.md'), ...docs.sort()];
}

/** The code outside the docs, as one text: where a name the docs use may otherwise appear. */
function codeText(): string {
  const texts: string[] = [];
  for (const root of CODE_ROOTS) {
    const dir = path.join(ROOT, root);
    if (existsSync(dir)) for (const file of filesUnder(dir)) if (!file.startsWith(HERE)) texts.push(readFileSync(file, 'utf8'));
  }
  for (const file of [
    '.env.example',
    'Dockerfile',
    'docker-compose.yml',
    'package.json',
    'codegen.ts',
    'vitest.config.ts',
    'eslint.config.js',
  ]) {
    const full = path.join(ROOT, file);
    if (existsSync(full)) texts.push(readFileSync(full, 'utf8'));
  }
  return texts.join('\n');
}

/** Environment variables the code reads: config.ts's names, `process.env`/`env` reads anywhere, and .env.example. */
function environmentVariables(code: string): Set<string> {
  const names = new Set<string>();
  const configFile = path.join(ROOT, CONFIG_FILE);
  if (!existsSync(configFile))
    throw new Error(`${CONFIG_FILE} is gone: point CONFIG_FILE in this test at where the configuration is read now`);
  const config = readFileSync(configFile, 'utf8');
  for (const match of config.matchAll(/['"`]([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)['"`]/g)) names.add(match[1]!);
  for (const match of code.matchAll(/\benv(?:\.([A-Z][A-Z0-9_]*)|\[\s*['"]([A-Z][A-Z0-9_]*)['"]\s*\])/g))
    names.add((match[1] ?? match[2])!);
  for (const match of code.matchAll(/\{([^{}]*)\}\s*=\s*process\.env\b/g))
    for (const name of match[1]!.matchAll(/\b([A-Z][A-Z0-9_]*)\b/g)) names.add(name[1]!);
  // Variables the code hands to a child process: `env: { GOGC: '400', ...process.env }`.
  for (const match of code.matchAll(/\benv:\s*\{([^{}]*)\}/g))
    for (const name of match[1]!.matchAll(/\b([A-Z][A-Z0-9_]*)\s*:/g)) names.add(name[1]!);
  const example = readFileSync(path.join(ROOT, '.env.example'), 'utf8');
  for (const match of example.matchAll(/^\s*#?\s*([A-Z][A-Z0-9_]*)=/gm)) names.add(match[1]!);
  return names;
}

function pathExists(reference: string): boolean {
  const clean = reference.replace(/[#:].*$/, '').replace(/\/$/, '');
  if (/[*<{…]/.test(clean)) {
    // A pattern: `schema/*.graphql`, `subgraphs/<name>/src`, `subgraphs/{user,cards}`: some file matches.
    const segments = clean.split('/');
    const walk = (dir: string, index: number): boolean => {
      if (index === segments.length) return true;
      const segment = segments[index]!;
      const pattern = new RegExp(`^${segment.replace(/[.+^$()|[\]\\]/g, '\\$&').replace(/<[^>]*>|\*|\{[^}]*\}|…/g, '.*')}$`);
      if (!existsSync(dir) || !statSync(dir).isDirectory()) return false;
      return readdirSync(dir).some((name) => pattern.test(name) && walk(path.join(dir, name), index + 1));
    };
    return walk(ROOT, 0);
  }
  return existsSync(path.join(ROOT, clean));
}

// ---- The tests. ----

describe('the docs match the code', () => {
  it('finds paths, links, settings and scripts in markdown, and nothing else', () => {
    const sample = [
      '# Title',
      'The engine is `platform/messaging/outbox.ts` and `platform/messaging/missing.ts`; `context.ts` is relative.',
      'Set `MONGODB_URI` or the environment variable `NOT_A_SETTING`; a refusal answers `VALIDATION_FAILED`.',
      'See [Cards](cards.md#funds) and [the web](https://example.com), `npm run compose:check` and',
      '```sh',
      'NODE_ENV=production npm run -s device-login -- mobile',
      'cat `platform/in-a-fence.ts`',
      '```',
      '`npm run',
      '  schema:check` across lines, `HOST=0.0.0.0`, `GET /health`, `/usr/bin/chromium`.',
    ].join('\n');
    const refs = extractReferences(sample, new Set(['platform', 'docs']));
    expect(refs.map(({ kind, name, line, asSetting }) => `${line} ${kind} ${name}${asSetting ? ' (setting)' : ''}`)).toEqual([
      '2 path platform/messaging/outbox.ts',
      '2 path platform/messaging/missing.ts',
      '3 env MONGODB_URI (setting)',
      '3 env NOT_A_SETTING (setting)',
      '3 env VALIDATION_FAILED',
      '4 link cards.md#funds',
      '4 script compose:check',
      '6 env NODE_ENV (setting)',
      '6 script device-login',
      '9 script schema:check',
      '10 env HOST (setting)',
    ]);
  });

  it('reads headings as GitHub anchors them', () => {
    const anchors = anchorsOf(
      '# Cards\n## Card authorization on a hot path\n## Funds: what a card may spend\n## Funds: what a card may spend\n### `npm run` and [a link](x.md)',
    );
    expect([...anchors]).toEqual([
      'cards',
      'card-authorization-on-a-hot-path',
      'funds-what-a-card-may-spend',
      'funds-what-a-card-may-spend-1',
      'npm-run-and-a-link',
    ]);
  });

  it('reports a bad reference with the doc, the line and the missing thing', () => {
    const sample =
      'Line one.\nThe outbox is `platform/messaging/no-such-file.ts`, run `npm run no-such-script`, set the environment variable `NO_SUCH_SETTING`.\n';
    expect(problemsOf('docs/sample.md', sample)).toEqual([
      'docs/sample.md:2: path `platform/messaging/no-such-file.ts` does not exist',
      'docs/sample.md:2: setting `NO_SUCH_SETTING` is read nowhere (platform/runtime/config.ts, process.env, .env.example)',
      'docs/sample.md:2: npm script `no-such-script` is not in package.json',
    ]);
  });

  it('names only paths, settings and scripts that exist, in README.md and docs/**/*.md', () => {
    const problems = docFiles().flatMap((file) => problemsOf(path.relative(ROOT, file), readFileSync(file, 'utf8')));
    expect(problems).toEqual([]);
  });
});

let repository: { topLevel: Set<string>; code: string; env: Set<string>; scripts: Set<string> } | undefined;

function problemsOf(doc: string, markdown: string): string[] {
  repository ??= (() => {
    const code = codeText();
    const manifest = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
    return { topLevel: topLevelEntries(), code, env: environmentVariables(code), scripts: new Set(Object.keys(manifest.scripts ?? {})) };
  })();
  const { topLevel, code, env, scripts } = repository;
  const problems: string[] = [];
  const at = (line: number) => `${doc}:${line}`;
  for (const ref of extractReferences(markdown, topLevel)) {
    switch (ref.kind) {
      case 'path':
        if (!pathExists(ref.name)) problems.push(`${at(ref.line)}: path \`${ref.name}\` does not exist`);
        break;
      case 'link': {
        const [target = '', anchor] = ref.name.split('#');
        const file = target === '' ? path.join(ROOT, doc) : path.resolve(ROOT, path.dirname(doc), decodeURIComponent(target));
        if (!existsSync(file)) problems.push(`${at(ref.line)}: link \`${ref.name}\`: ${path.relative(ROOT, file)} does not exist`);
        else if (anchor !== undefined && file.endsWith('.md') && !anchorsOf(readFileSync(file, 'utf8')).has(anchor))
          problems.push(`${at(ref.line)}: link \`${ref.name}\`: ${path.relative(ROOT, file)} has no heading #${anchor}`);
        break;
      }
      case 'env':
        if (env.has(ref.name)) break;
        if (ref.asSetting)
          problems.push(`${at(ref.line)}: setting \`${ref.name}\` is read nowhere (${CONFIG_FILE}, process.env, .env.example)`);
        else if (!new RegExp(`\\b${ref.name}\\b`).test(code))
          problems.push(`${at(ref.line)}: \`${ref.name}\` is named nowhere in the code`);
        break;
      case 'script':
        if (!scripts.has(ref.name)) problems.push(`${at(ref.line)}: npm script \`${ref.name}\` is not in package.json`);
        break;
    }
  }
  return problems;
}
