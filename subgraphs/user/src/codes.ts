import { timingSafeEqual } from 'node:crypto';
import type { Collection, Filter, UpdateFilter } from 'mongodb';

/** A pending one-time code: only its hash is stored, with the tries it has had and its expiry. */
export interface PendingCode {
  _id: string;
  codeHash: string;
  attempts: number;
  dtsExpiry: Date;
}

/** Tries a code may have before it is burned. */
export const MAX_CODE_ATTEMPTS = 5;

/**
 * Checks a code and consumes it. The try is counted before the comparison, in one conditional
 * update, so a burst of guesses gets at most MAX_CODE_ATTEMPTS comparisons; the right code is
 * consumed by a conditional delete, so two racing uses cannot both pass. Returns the pending
 * record when the code was right, else null.
 */
export async function consumeCode<T extends PendingCode>(collection: Collection<T>, id: string, givenHash: string): Promise<T | null> {
  const pending = (await collection.findOneAndUpdate(
    { _id: id, attempts: { $lt: MAX_CODE_ATTEMPTS }, dtsExpiry: { $gt: new Date() } } as Filter<T>,
    { $inc: { attempts: 1 } } as unknown as UpdateFilter<T>,
    { returnDocument: 'after' },
  )) as T | null;
  if (!pending) return null;
  const given = Buffer.from(givenHash);
  const stored = Buffer.from(pending.codeHash);
  if (given.length !== stored.length || !timingSafeEqual(given, stored)) return null;
  const consumed = await collection.deleteOne({ _id: id, codeHash: pending.codeHash } as Filter<T>);
  return consumed.deletedCount === 1 ? pending : null;
}
