import type { Collection, Db } from 'mongodb';

/** A user's setting of one alert type. `_id` is `<SvcUserId>:<alertTypeId>`. */
export interface AlertSettingDocument {
  _id: string;
  SvcUserId: string;
  alertTypeId: string;
  isEnabled: boolean | null;
  parameters: Record<string, unknown> | null;
  dtsModified: Date;
}

export function alertSettingsCollection(db: Db): Collection<AlertSettingDocument> {
  return db.collection<AlertSettingDocument>('alertSettings');
}

/** The indexes of every query on this collection. */
export async function createAlertIndexes(db: Db): Promise<void> {
  await alertSettingsCollection(db).createIndex({ SvcUserId: 1 });
}
