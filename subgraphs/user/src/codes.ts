import { timingSafeEqual } from 'node:crypto';
import type { Collection } from 'mongodb';
import { appError, ErrorCode } from '../../../platform/contracts/errors.js';
import {
  holds,
  liveLeases,
  newLease,
  secondsUntilFirstLapse,
  SLOT_WAIT_MS,
  SlotsTaken,
  transact,
  waitForSlot,
  without,
  type Lease,
  type Leased,
} from './attempt-slots.js';

/**
 * A pending one-time code: only its hash is stored, with the wrong tries it has had, the tries
 * in flight (`leases`) and its expiry.
 */
export interface PendingCode extends Leased {
  _id: string;
  codeHash: string;
  attempts: number;
  dtsExpiry: Date;
}

/** Wrong tries a code may have before it is burned. */
export const MAX_CODE_ATTEMPTS = 5;

/**
 * Checks a code and consumes it. Each try reserves a slot before the comparison, in one
 * conditional write, and wrong tries plus tries in flight never exceed MAX_CODE_ATTEMPTS, so a
 * burst of guesses gets at most that many comparisons; only a wrong try is counted, so the right
 * code sent twice at once is no failure. The right code is consumed by a delete conditional on
 * the version read, so two racing uses cannot both pass. Returns the pending record when the code
 * was right, else null; refuses with TOO_MANY_ATTEMPTS when no slot frees within the wait
 * (`waitForSlot`; `slotWaitMs` is how long without any try settling).
 */
export async function consumeCode<T extends PendingCode>(
  collection: Collection<T>,
  id: string,
  givenHash: string,
  slotWaitMs = SLOT_WAIT_MS,
): Promise<T | null> {
  // codeHash is pinned: a code issued again meanwhile is another code, with its own tries.
  const reserved = await waitForSlot(
    () =>
      transact<T, { lease: Lease; pending: T } | 'gone' | SlotsTaken>(
        collection,
        id,
        (pending, now) => {
          if (!pending || pending.dtsExpiry.getTime() <= now.getTime() || pending.attempts >= MAX_CODE_ATTEMPTS)
            return { change: { kind: 'keep' }, result: 'gone' };
          const leases = liveLeases(pending.leases, now);
          if (pending.attempts + leases.length >= MAX_CODE_ATTEMPTS)
            return { change: { kind: 'keep' }, result: new SlotsTaken(pending.version, secondsUntilFirstLapse(leases, now)) };
          const lease = newLease(now);
          return { change: { kind: 'write', set: { leases: [...leases, lease] } as Partial<T> }, result: { lease, pending } };
        },
        ['codeHash'],
      ),
    slotWaitMs,
  );
  if (reserved instanceof SlotsTaken) {
    const { retryAfterSeconds } = reserved;
    throw appError(ErrorCode.TOO_MANY_ATTEMPTS, `Too many tries of this code are in progress; try again in ${retryAfterSeconds} s.`, {
      retryAfterSeconds,
    });
  }
  if (reserved === 'gone') return null;
  const { lease, pending } = reserved;
  const given = Buffer.from(givenHash);
  const stored = Buffer.from(pending.codeHash);
  const right = given.length === stored.length && timingSafeEqual(given, stored);
  return transact<T, T | null>(
    collection,
    id,
    (current, now) => {
      // Consumed by a racing use, or replaced by a new code.
      if (!current || current.codeHash !== pending.codeHash) return { change: { kind: 'keep' }, result: null };
      // A lease that lapsed (a stalled process) may have been given to another try: it passes no code.
      if (right)
        return holds(current.leases, lease) ? { change: { kind: 'delete' }, result: current } : { change: { kind: 'keep' }, result: null };
      return {
        change: {
          kind: 'write',
          set: { attempts: current.attempts + 1, leases: without(liveLeases(current.leases, now), lease) } as Partial<T>,
        },
        result: null,
      };
    },
    ['codeHash'],
  );
}
