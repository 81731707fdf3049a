import type { FindCursor } from 'mongodb';
import { appError, ErrorCode } from './errors.js';

/** The aggregator spec's paging: numberOfRecords 1-1000 (default 1000), skipRecords from 0. */
export function checkPage(input: { numberOfRecords?: number | null; skipRecords?: number | null }): { limit: number; skip: number } {
  const limit = input.numberOfRecords ?? 1000;
  const skip = input.skipRecords ?? 0;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw appError(ErrorCode.VALIDATION_FAILED, 'numberOfRecords must be an integer from 1 to 1000.', { field: 'numberOfRecords' });
  if (!Number.isInteger(skip) || skip < 0) throw appError(ErrorCode.VALIDATION_FAILED, 'skipRecords must be an integer from 0.', { field: 'skipRecords' });
  return { limit, skip };
}

/**
 * One page of a sorted cursor with the spec's `total`: one record more than asked is read to
 * tell whether more exist.
 */
export async function readPage<T>(cursor: FindCursor<T>, page: { limit: number; skip: number }): Promise<{ items: T[]; total: { skipRecords: number; numberOfRecords: number; more: boolean } }> {
  const docs = await cursor.skip(page.skip).limit(page.limit + 1).toArray();
  const items = docs.slice(0, page.limit);
  return { items, total: { skipRecords: page.skip, numberOfRecords: items.length, more: docs.length > items.length } };
}
