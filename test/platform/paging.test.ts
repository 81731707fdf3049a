import { describe, expect, it } from 'vitest';
import { refusal } from '../support/refusal.js';
import { connectionOf, connectionPage, offsetConnection, type Connection } from '../../platform/graphql/paging.js';

describe('Relay connections over offset pages', () => {
  const letters = 'abcdefghij'.split('');
  const list = (page: { numberOfRecords: number; skipRecords: number }) =>
    Promise.resolve({
      items: letters.slice(page.skipRecords, page.skipRecords + page.numberOfRecords),
      total: { more: page.skipRecords + page.numberOfRecords < letters.length },
    });

  it('walks forward with first and after, and back with last and before, over every record once', async () => {
    const forward: string[] = [];
    let after: string | null = null;
    for (let pages = 0; pages < 10; pages += 1) {
      const page: Connection<string> = await offsetConnection({ first: 3, after }, list);
      forward.push(...page.edges.map((edge) => edge.node));
      expect(page.pageInfo.hasPreviousPage).toBe(after !== null);
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(forward).toEqual(letters);

    const last = await offsetConnection({ first: 1, after: (await offsetConnection({ first: 9 }, list)).pageInfo.endCursor }, list);
    expect(last.edges.map((edge) => edge.node)).toEqual(['j']);
    const backward: string[] = [];
    let before: string | null = last.pageInfo.startCursor;
    backward.unshift('j');
    for (let pages = 0; pages < 10 && before; pages += 1) {
      const page: Connection<string> = await offsetConnection({ last: 4, before }, list);
      backward.unshift(...page.edges.map((edge) => edge.node));
      expect(page.pageInfo.hasNextPage).toBe(true);
      if (!page.pageInfo.hasPreviousPage) break;
      before = page.pageInfo.startCursor;
    }
    expect(backward).toEqual(letters);
  });

  it('answers an empty page with null cursors', () => {
    expect(connectionOf([], { skip: 0, backward: false }, false)).toEqual({
      edges: [],
      pageInfo: { hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null },
    });
  });

  it('refuses sizes out of range, foreign cursors, both directions at once, and last without before, naming the argument', () => {
    expect(refusal(() => connectionPage({ first: 0 }))).toMatchObject({ code: 'VALIDATION_FAILED', field: 'first' });
    expect(refusal(() => connectionPage({ first: 1001 }))).toMatchObject({ field: 'first' });
    expect(refusal(() => connectionPage({ last: 0, before: Buffer.from('offset:3').toString('base64url') }))).toMatchObject({
      field: 'last',
    });
    for (const cursor of [
      '',
      'offset:1',
      Buffer.from('offset:-1').toString('base64url'),
      Buffer.from('offset:1.5').toString('base64url'),
      Buffer.from('valueOf').toString('base64url'),
      Buffer.from('offset:01').toString('base64url'),
    ]) {
      expect(
        refusal(() => connectionPage({ first: 2, after: cursor })),
        cursor,
      ).toMatchObject({ field: 'after' });
    }
    expect(refusal(() => connectionPage({ first: 2, before: Buffer.from('offset:3').toString('base64url') }))).toMatchObject({
      field: 'before',
    });
    expect(refusal(() => connectionPage({ last: 2 }))).toMatchObject({ field: 'before' });
  });
});
