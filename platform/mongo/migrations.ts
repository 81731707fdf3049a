import { randomUUID } from 'node:crypto';
import { MongoServerError, type Db } from 'mongodb';

/** Where a migration tells what it did: a line and its fields. */
export type MigrationLog = (message: string, fields: Record<string, unknown>) => void;

/**
 * A change to stored documents that runs once per database, before a service or the seed uses
 * it. `run` must convert each document at most once even when it is run again after a crash part
 * of the way (see `convertOnce`), and finds nothing to do on a new, empty database.
 */
export interface Migration {
  /** Unique and permanent: the record that the migration ran is kept under it. */
  id: string;
  run(db: Db, log: MigrationLog): Promise<void>;
}

/** A stored document as a migration reads it: any members. */
export type StoredDocument = { _id: string } & Record<string, unknown>;

interface MigrationRecord {
  _id: string;
  state: 'running' | 'done';
  owner: string;
  leaseUntil: Date;
  dtsDone: Date | null;
}

/** How long a claim on a migration holds without being renewed: a process that died frees it then. */
const LEASE_MS = 60_000;
/** The longest a process waits for another one's migration before it gives up starting. */
const WAIT_MS = 15 * 60_000;

/**
 * Applies the migrations a database has not had yet, in order. One process runs each (a claim
 * with a lease in the `migrations` collection); the others wait until it is done, so nothing reads
 * or writes documents of the old shape and the new at once. A claim whose process died is taken
 * over once its lease runs out. Old and new code must not write at once: a service whose stored
 * shape changes is stopped before the new version starts (docs/database.md).
 */
export async function applyMigrations(db: Db, migrations: readonly Migration[], log: MigrationLog = () => {}): Promise<void> {
  const records = db.collection<MigrationRecord>('migrations');
  const owner = randomUUID();
  for (const migration of migrations) {
    const giveUpAt = Date.now() + WAIT_MS;
    for (;;) {
      const record = await records.findOne({ _id: migration.id });
      if (record?.state === 'done') break;
      const now = new Date();
      const leaseUntil = new Date(now.getTime() + LEASE_MS);
      let claimed = false;
      if (!record) {
        try {
          await records.insertOne({ _id: migration.id, state: 'running', owner, leaseUntil, dtsDone: null });
          claimed = true;
        } catch (error) {
          if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
        }
      } else if (record.leaseUntil < now) {
        claimed =
          (await records.findOneAndUpdate(
            { _id: migration.id, state: 'running', owner: record.owner },
            { $set: { owner, leaseUntil } },
          )) !== null;
      }
      if (claimed) {
        log('migration started', { migration: migration.id });
        const renew = setInterval(() => {
          records.updateOne({ _id: migration.id, owner }, { $set: { leaseUntil: new Date(Date.now() + LEASE_MS) } }).catch(() => {});
        }, LEASE_MS / 3);
        try {
          await migration.run(db, log);
        } catch (error) {
          // Free the claim at once, so that the next start tries again without waiting for the lease.
          await records.updateOne({ _id: migration.id, owner }, { $set: { leaseUntil: new Date(0) } }).catch(() => {});
          throw error;
        } finally {
          clearInterval(renew);
        }
        const finished = await records.updateOne({ _id: migration.id, owner }, { $set: { state: 'done', dtsDone: new Date() } });
        // A claim taken over while this process was stalled: the new owner finishes, and this one waits for it.
        if (finished.modifiedCount === 0) continue;
        log('migration done', { migration: migration.id });
        break;
      }
      if (Date.now() > giveUpAt) throw new Error(`migration ${migration.id} is still being run by another process`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/**
 * Rewrites every document of a collection that `migrationId` has not converted yet, marking it in
 * the same update (`migratedBy`), so a run that stopped part of the way converts the rest and no
 * document twice. `convert` returns the members to change (undefined removes one), or null to
 * leave the document as it is.
 */
export async function convertOnce(
  db: Db,
  collection: string,
  migrationId: string,
  convert: (doc: StoredDocument) => Record<string, unknown> | null,
): Promise<number> {
  const documents = db.collection<{ _id: string; migratedBy?: string[] }>(collection);
  let converted = 0;
  for await (const doc of documents.find({ migratedBy: { $ne: migrationId } })) {
    const changes = convert(doc);
    if (!changes) continue;
    const set = Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined));
    const unset = Object.fromEntries(
      Object.entries(changes)
        .filter(([, value]) => value === undefined)
        .map(([name]) => [name, '' as const]),
    );
    const result = await documents.updateOne(
      { _id: doc._id, migratedBy: { $ne: migrationId } },
      { $set: set, ...(Object.keys(unset).length > 0 ? { $unset: unset } : {}), $addToSet: { migratedBy: migrationId } },
    );
    converted += result.modifiedCount;
  }
  return converted;
}
