// What `npm run config-docs` writes from the configuration's one definition (platform/runtime/config-schema.ts):
// the table in docs/operations.md, between its markers, and `.env.example`.
import { format, resolveConfig } from 'prettier';
import { isDerived, NAMES, SECTIONS, SETTINGS, type Name, type Setting } from '../../platform/runtime/config-schema.js';

/** The doc whose configuration table is written, from the repository root. */
export const OPERATIONS_DOC = 'docs/operations.md';

/** The example environment file, written whole, from the repository root. */
export const ENV_EXAMPLE = '.env.example';

const START = '<!-- config-table:start: written by `npm run config-docs` from platform/runtime/config-schema.ts -->';
const END = '<!-- config-table:end -->';

/** The variables of each section, in the table's order. */
function bySection(): [title: string, names: Name[]][] {
  return Object.entries(SECTIONS).map(([key, title]) => [title, NAMES.filter((name) => SETTINGS[name].section === key)]);
}

/** A variable's default as the docs show it: the value, what derives it, or what unset means. */
function defaultText(setting: Setting): string {
  const fallback = setting.default;
  if (typeof fallback === 'number') return String(fallback);
  if (typeof fallback !== 'object') return `\`${String(fallback)}\``;
  return isDerived(fallback) ? fallback.doc : fallback.unset;
}

/** The configuration table, markdown, before formatting. */
function configTable(): string {
  const rows = ['| variable | default | accepts | meaning |', '| --- | --- | --- | --- |'];
  for (const [title, names] of bySection()) {
    rows.push(`| **${title}** | | | |`);
    for (const name of names) {
      const setting: Setting = SETTINGS[name];
      rows.push(`| \`${name}\` | ${defaultText(setting)} | ${setting.type.description ?? 'any text'} | ${setting.meaning} |`);
    }
  }
  return rows.join('\n');
}

/**
 * docs/operations.md with its configuration table written afresh between the markers, formatted
 * as Prettier formats the file (it aligns the table's columns).
 */
export async function withConfigTable(doc: string, file: string): Promise<string> {
  const start = doc.indexOf(START);
  const end = doc.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${file} has no ${START} ... ${END} markers around its configuration table`);
  const written = `${doc.slice(0, start + START.length)}\n\n${configTable()}\n\n${doc.slice(end)}`;
  return format(written, { ...(await resolveConfig(file)), filepath: file });
}

/** Markdown made plain for a shell comment: no backticks, a link to a doc as its path. */
function plain(markdown: string): string {
  return markdown.replace(/\[[^\]]*\]\(([^)]+)\)/g, 'docs/$1').replaceAll('`', '');
}

/** `.env.example`: every variable, by section, its default written out where it is a fixed one. */
export function envExample(): string {
  const lines = [
    `# Every variable the configuration reads, written by \`npm run config-docs\` from platform/runtime/config-schema.ts`,
    '# (docs/operations.md, Configuration, has the same table). Copy to .env (or export) to change a default: a line',
    '# that sets a variable holds its default; a commented one shows a value for a variable without a fixed default.',
  ];
  for (const [title, names] of bySection()) {
    lines.push('', `# ---- ${title} ----`);
    for (const name of names) {
      const setting: Setting = SETTINGS[name];
      const fallback = setting.default;
      lines.push('', `# ${plain(setting.meaning)}. Accepts ${setting.type.description ?? 'any text'}.`);
      if (typeof fallback !== 'object') lines.push(`${name}=${String(fallback)}`);
      else
        lines.push(`# ${isDerived(fallback) ? 'Default' : 'Unset'}: ${plain(defaultText(setting))}.`, `# ${name}=${setting.example ?? ''}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
