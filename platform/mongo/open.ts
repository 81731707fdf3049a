import type { DatabaseConfig } from '../runtime/config-slices.js';
import { startEmbeddedMongo, type EmbeddedMongo } from './ferretdb.js';
import { connectMongo, type Mongo } from './mongo.js';

/** Connects to `MONGODB_URI`, or starts the embedded FerretDB when it is unset. */
export async function openDatabase(config: DatabaseConfig): Promise<{ mongo: Mongo; embedded: EmbeddedMongo | null }> {
  const embedded = config.mongodbUri ? null : await startEmbeddedMongo({ dataDir: config.dataDir, ferretdbBin: config.ferretdbBin });
  const mongo = await connectMongo(config.mongodbUri ?? embedded!.uri, config.dbPrefix);
  return { mongo, embedded };
}
