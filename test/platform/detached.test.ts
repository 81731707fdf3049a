import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { detached } from '../../platform/runtime/detached.js';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** The MiB still in use once `keep` has taken a name out of each of eight texts of 1 MiB, and the texts are gone. */
function keptBy(keep: (name: string) => string): { names: string[]; mib: number } {
  collectGarbage();
  const before = process.memoryUsage().heapUsed;
  const names: string[] = [];
  for (let i = 0; i < 8; i += 1) {
    const text = `query transactionsPage${i} { me } # ${String(i).repeat(1 << 20)}`;
    names.push(keep(text.slice(6, 23)));
  }
  collectGarbage();
  return { names, mib: (process.memoryUsage().heapUsed - before) / 2 ** 20 };
}

describe('a detached string', () => {
  it('is the same text, and keeps no larger text alive, where a slice of it does', () => {
    const sliced = keptBy((name) => name);
    const own = keptBy(detached);
    expect(own.names).toEqual(sliced.names);
    expect(own.names[3]).toBe('transactionsPage3');
    // The slices keep the eight texts; the detached names, their own few bytes.
    expect(sliced.mib).toBeGreaterThan(7);
    expect(own.mib).toBeLessThan(2);
  });
});
