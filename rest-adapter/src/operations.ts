import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const OPERATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'operations');

/** Reads an operation file of `operations/` with the fragment files its `#import` lines name. */
export function loadOperation(file: string, seen = new Set<string>()): string {
  if (seen.has(file)) return '';
  seen.add(file);
  const text = readFileSync(path.join(OPERATIONS_DIR, file), 'utf8');
  const imports = [...text.matchAll(/^#import (\S+)$/gm)].map((match) => loadOperation(match[1]!, seen));
  return [text, ...imports].join('\n');
}
