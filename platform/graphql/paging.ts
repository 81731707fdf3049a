import type { FindCursor } from 'mongodb';
import { appError, ErrorCode } from '../contracts/errors.js';

/** The aggregator spec's paging: numberOfRecords 1-1000 (default 1000), skipRecords from 0. */
export function checkPage(input: { numberOfRecords?: number | null; skipRecords?: number | null }): { limit: number; skip: number } {
  const limit = input.numberOfRecords ?? 1000;
  const skip = input.skipRecords ?? 0;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
    throw appError(ErrorCode.VALIDATION_FAILED, 'numberOfRecords must be an integer from 1 to 1000.', { field: 'numberOfRecords' });
  if (!Number.isInteger(skip) || skip < 0)
    throw appError(ErrorCode.VALIDATION_FAILED, 'skipRecords must be an integer from 0.', { field: 'skipRecords' });
  return { limit, skip };
}

/**
 * One page of a sorted cursor with the spec's `total`: one record more than asked is read to
 * tell whether more exist.
 */
export async function readPage<T>(
  cursor: FindCursor<T>,
  page: { limit: number; skip: number },
): Promise<{ items: T[]; total: { skipRecords: number; numberOfRecords: number; more: boolean } }> {
  const docs = await cursor
    .skip(page.skip)
    .limit(page.limit + 1)
    .toArray();
  const items = docs.slice(0, page.limit);
  return { items, total: { skipRecords: page.skip, numberOfRecords: items.length, more: docs.length > items.length } };
}

/** Relay's connection arguments: forward with `first` and `after`, or backward with `last` and `before`. */
export interface ConnectionArgs {
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
}

/** One page of a Relay connection (the Relay cursor connections specification). */
export interface Connection<T> {
  edges: Array<{ cursor: string; node: T }>;
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
}

const CURSOR_PREFIX = 'offset:';
const cursorAt = (offset: number) => Buffer.from(`${CURSOR_PREFIX}${offset}`).toString('base64url');

function offsetOf(cursor: string, field: 'after' | 'before'): number {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const offset = text.startsWith(CURSOR_PREFIX) ? Number(text.slice(CURSOR_PREFIX.length)) : Number.NaN;
  if (!Number.isSafeInteger(offset) || offset < 0 || cursorAt(offset) !== cursor)
    throw appError(ErrorCode.VALIDATION_FAILED, `${field} is not a cursor of this connection.`, { field });
  return offset;
}

/**
 * The offset page a connection's arguments ask for, over a list in a stable order: `first` (1-1000,
 * default 100) records `after` a cursor, or `last` records `before` one. Mixing the two directions,
 * or `last` without `before`, is refused: backward paging starts from a cursor.
 */
export function connectionPage(args: ConnectionArgs): { skip: number; limit: number; backward: boolean } {
  const given = (value: unknown) => value !== undefined && value !== null;
  const backward = given(args.last) || given(args.before);
  if ((given(args.first) || given(args.after)) && backward)
    throw appError(ErrorCode.VALIDATION_FAILED, 'Page forward (first, after) or backward (last, before), not both.', {
      field: given(args.last) ? 'last' : 'before',
    });
  const field = backward ? 'last' : 'first';
  const size = (backward ? args.last : args.first) ?? 100;
  if (!Number.isInteger(size) || size < 1 || size > 1000)
    throw appError(ErrorCode.VALIDATION_FAILED, `${field} must be an integer from 1 to 1000.`, { field });
  if (backward) {
    if (!given(args.before))
      throw appError(ErrorCode.VALIDATION_FAILED, 'last pages backward from a cursor: give before.', { field: 'before' });
    const end = offsetOf(args.before, 'before');
    const skip = Math.max(0, end - size);
    return { skip, limit: end - skip, backward: true };
  }
  return { skip: given(args.after) ? offsetOf(args.after, 'after') + 1 : 0, limit: size, backward: false };
}

/** The connection of one page read by `connectionPage`'s offsets; `more` says whether records follow it. */
export function connectionOf<T>(items: readonly T[], page: { skip: number; backward: boolean }, more: boolean): Connection<T> {
  const edges = items.map((node, i) => ({ cursor: cursorAt(page.skip + i), node }));
  return {
    edges,
    pageInfo: {
      // Backward, the cursor given is a record that follows the page.
      hasNextPage: page.backward || more,
      hasPreviousPage: page.skip > 0,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
  };
}

/**
 * A Relay connection over a list served in offset pages (`numberOfRecords`, `skipRecords`), as
 * the REST routes page: `list` reads one such page, and its `total.more` tells what follows.
 */
export async function offsetConnection<T>(
  args: ConnectionArgs,
  list: (page: { numberOfRecords: number; skipRecords: number }) => Promise<{ items: T[]; total: { more: boolean } }>,
): Promise<Connection<T>> {
  const page = connectionPage(args);
  if (page.limit === 0) return connectionOf([], page, true);
  const { items, total } = await list({ numberOfRecords: page.limit, skipRecords: page.skip });
  return connectionOf(items, page, total.more);
}
