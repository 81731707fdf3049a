import { trace } from '@opentelemetry/api';
import {
  MongoClient,
  MongoServerError,
  type Collection,
  type CommandFailedEvent,
  type CommandSucceededEvent,
  type Db,
  type Document,
  type OptionalUnlessRequiredId,
} from 'mongodb';
import { databaseCommands } from '../telemetry/metrics.js';
import { SpanKind, SpanStatusCode, startChildSpan, type Span } from '../telemetry/tracing.js';
import type { SubgraphName } from '../runtime/config.js';
import { withinTime } from '../http/deadline.js';
import { guardDriverWrites } from './driver-guard.js';

/** The fields one command filtered on, in a collection. */
interface QueryShape {
  database: string;
  collection: string;
  command: string;
  fields: string[];
}

/** The field names a filter constrains, through `$and`, `$or` and `$nor`, sorted. */
function filterFields(filter: Document): string[] {
  const fields = new Set<string>();
  const visit = (part: Document) => {
    for (const [key, value] of Object.entries(part)) {
      if (key === '$and' || key === '$or' || key === '$nor') for (const inner of value as Document[]) visit(inner);
      else if (!key.startsWith('$')) fields.add(key);
    }
  };
  visit(filter);
  return [...fields].sort();
}

/** Counts the database commands a client sends, by database, collection and command name, and records the shapes of their filters. */
class CommandCounter {
  private counts = new Map<string, number>();
  private shapes = new Map<string, QueryShape>();

  /** Records the shape of a command's filters (field names, not values): what the index check reads. */
  recordShapes(database: string, command: Document): void {
    const name = Object.keys(command)[0] ?? '';
    const collection = typeof command[name] === 'string' ? command[name] : '';
    const filters: Array<Document | undefined> =
      name === 'find'
        ? [command.filter as Document | undefined]
        : name === 'findAndModify'
          ? [command.query as Document | undefined]
          : name === 'update'
            ? ((command.updates as Array<{ q?: Document }> | undefined)?.map((u) => u.q) ?? [])
            : name === 'delete'
              ? ((command.deletes as Array<{ q?: Document }> | undefined)?.map((d) => d.q) ?? [])
              : name === 'count'
                ? [command.query as Document | undefined]
                : name === 'aggregate'
                  ? [(command.pipeline as Document[] | undefined)?.[0]?.$match as Document | undefined]
                  : [];
    for (const filter of filters) {
      const fields = filterFields(filter ?? {});
      if (fields.length === 0) continue;
      const key = `${database}.${collection}:${fields.join(',')}`;
      if (!this.shapes.has(key)) this.shapes.set(key, { database, collection, command: name, fields });
    }
  }

  /** Every distinct filter shape recorded since the last reset. */
  queryShapes(): QueryShape[] {
    return [...this.shapes.values()];
  }

  record(database: string, collection: string, command: string): void {
    const key = `${database}.${collection}.${command}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  /** Commands of one kind sent so far, e.g. `count('banking_cards', 'cards', 'find')`. */
  count(database: string, collection: string, command: string): number {
    return this.counts.get(`${database}.${collection}.${command}`) ?? 0;
  }

  /** Every command sent to one database, keyed `collection.command`. */
  snapshot(database: string): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [key, value] of this.counts) {
      if (key.startsWith(`${database}.`)) out[key.slice(database.length + 1)] = value;
    }
    return out;
  }

  reset(): void {
    this.counts.clear();
    this.shapes.clear();
  }
}

/** A MongoDB connection shared by the services of one process, with a command counter. */
export interface Mongo {
  client: MongoClient;
  /** The database a subgraph owns: `<prefix><name>`. */
  db(name: SubgraphName): Db;
  databaseName(name: SubgraphName): string;
  commands: CommandCounter;
  /**
   * True when the server is a FerretDB without the project's `atomic-writes` patch (a
   * `FERRETDB_BIN` or `MONGODB_URI` of the user's own): its SQLite backend does not make one update
   * atomic against other connections (concurrent `$inc`s on one document lose updates), so
   * each subgraph's database then gets its own client with a single connection, which serializes
   * that database's commands in this process and keeps every conditional update atomic. MongoDB,
   * and the embedded FerretDB built with the patch, keep per-document atomicity themselves and get
   * one pooled client.
   */
  serialized: boolean;
  /** True when the server answers a ping. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/** True when the server is a FerretDB whose update, findAndModify and delete are not atomic. */
async function needsSerializedWrites(uri: string): Promise<boolean> {
  const probe = new MongoClient(uri, { serverSelectionTimeoutMS: 10_000, maxPoolSize: 1 });
  try {
    const info = await probe.db('admin').command({ buildInfo: 1 });
    return info.ferretdbVersion !== undefined && (info.ferretdbFeatures as { atomicWrites?: unknown } | undefined)?.atomicWrites !== true;
  } finally {
    await probe.close();
  }
}

/** Connects with the official driver and counts every command it starts; each is timed in the metrics and, inside a recorded trace, is a span. */
export async function connectMongo(uri: string, dbPrefix: string, appName = 'banking-graph'): Promise<Mongo> {
  guardDriverWrites();
  const serialized = await needsSerializedWrites(uri);
  const commands = new CommandCounter();
  const newClient = () => {
    const created = new MongoClient(uri, {
      appName,
      monitorCommands: true,
      serverSelectionTimeoutMS: 10_000,
      ...(serialized ? { maxPoolSize: 1 } : {}),
    });
    // A command's span, kept from its start to its end event; only inside a trace being recorded.
    const spans = new Map<string, Span>();
    created.on('commandStarted', (event) => {
      const target: unknown = event.command[event.commandName];
      const collection = typeof target === 'string' ? target : '';
      commands.record(event.databaseName, collection, event.commandName);
      commands.recordShapes(event.databaseName, event.command);
      if (trace.getActiveSpan()?.isRecording()) {
        spans.set(
          `${event.address}/${event.requestId}`,
          startChildSpan(`mongodb ${event.commandName} ${collection}`.trim(), SpanKind.CLIENT, {
            'db.system.name': 'mongodb',
            'db.namespace': event.databaseName,
            'db.collection.name': collection,
            'db.operation.name': event.commandName,
          }),
        );
      }
    });
    const ended = (event: CommandSucceededEvent | CommandFailedEvent, outcome: 'ok' | 'error') => {
      databaseCommands.observe({ database: event.databaseName, command: event.commandName, outcome }, event.duration / 1000);
      const key = `${event.address}/${event.requestId}`;
      const span = spans.get(key);
      if (!span) return;
      spans.delete(key);
      if (outcome === 'error') span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    };
    created.on('commandSucceeded', (event) => ended(event, 'ok'));
    created.on('commandFailed', (event) => ended(event, 'error'));
    return created;
  };
  const client = newClient();
  await client.connect();
  // One single-connection client per database on FerretDB (see `serialized`); one pooled client on MongoDB.
  const perDatabase = new Map<SubgraphName, MongoClient>();
  const clientOf = (name: SubgraphName): MongoClient => {
    if (!serialized) return client;
    let dedicated = perDatabase.get(name);
    if (!dedicated) {
      dedicated = newClient();
      perDatabase.set(name, dedicated);
    }
    return dedicated;
  };
  const databaseName = (name: SubgraphName) => `${dbPrefix}${name}`;
  return {
    client,
    db: (name) => clientOf(name).db(databaseName(name)),
    databaseName,
    commands,
    serialized,
    // Readiness must answer fast while the server is away (the driver would wait for server selection).
    ping: () =>
      withinTime(client.db('admin').command({ ping: 1 }), 2000).then(
        () => true,
        () => false,
      ),
    close: async () => {
      await Promise.all([...perDatabase.values()].map((dedicated) => dedicated.close()));
      await client.close();
    },
  };
}

/**
 * Inserts a document unless one with its `_id` exists; true when inserted. Seeds use this rather
 * than an upsert with `$setOnInsert`, because FerretDB 1.24 drops top-level `null` and empty-array
 * members from a `$setOnInsert` document, and a record must read back as written.
 */
export async function insertIfAbsent<T extends Document & { _id: string }>(
  collection: Collection<T>,
  doc: OptionalUnlessRequiredId<T>,
): Promise<boolean> {
  try {
    await collection.insertOne(doc);
    return true;
  } catch (error) {
    if (error instanceof MongoServerError && error.code === 11000) return false;
    throw error;
  }
}
