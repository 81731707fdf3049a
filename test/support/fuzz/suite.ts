/**
 * Property-based fuzzing of every REST route and every GraphQL mutation (fast-check).
 *
 * Generated from data: the routes are `ROUTES` (their request schemas, path and query parameter
 * schemas and examples), the mutations are the Mutation fields of the running gateway's schema
 * (introspected; the list of tests comes from the committed supergraph). Each route starts from its
 * valid example with the right valid credential and changes one thing at a time: a field set to a
 * hostile value (wrong types, oversized and hostile strings, huge numbers), a property left out or
 * added, a path or query parameter, the credential header, or a malformed body. Every route and
 * mutation gets a deterministic list of boundary cases per field (every text field also gets every
 * name Object.prototype has, and path parameters the rest of the corpus of ./corpus.ts) plus random
 * runs from the committed seeds of ./seeds.ts, so a run is deterministic. `npm run fuzz -- --seeds
 * N` runs N fresh random seeds per route and mutation instead and prints each failing seed
 * (FUZZ_FRESH_SEEDS). The REST routes and the mutations are two test files (rest.e2e.ts,
 * graphql.e2e.ts) that run side by side, each on its own stack.
 *
 * Properties of every answer:
 * 1. no 5xx, except the 500s the specs themselves prescribe (an unknown login channel, DELETE /token
 *    without a token), never an INTERNAL error code (some routes map it to 404), no leaked
 *    exception text; the harness's contract check (status, headers, body shape) stays on;
 * 2. a refusal (4xx, or a GraphQL error with no data) leaves the four databases unchanged, apart
 *    from the documented side effects of refusals (`REFUSAL_SIDE_EFFECTS`); a 2xx for input that
 *    breaks the route's published request schema is a failure too;
 * 3. no HTML answer carries a `<script>` (JSON answers may echo anything, escaped).
 *
 * The databases are compared per request, cheaply: a listener on the services' MongoDB clients
 * marks each collection a write command touches, and only those collections are read again (every
 * collection's documents, sorted by _id, hashed). A full re-read at the end checks that the
 * listener missed nothing.
 */
import { createHash, randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import {
  buildClientSchema,
  buildSchema,
  getIntrospectionQuery,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
  isLeafType,
  Kind as GraphQLKind,
  parse,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLSchema,
  type IntrospectionQuery,
} from 'graphql';
import {
  BSON,
  type CommandFailedEvent,
  type CommandStartedEvent,
  type CommandSucceededEvent,
  type Document,
  type MongoClient,
} from 'mongodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SUBGRAPH_NAMES, type SubgraphName } from '../../../platform/runtime/config.js';
import { DEMO } from '../../../platform/domain/demo.js';
import { ownValue } from '../../../platform/contracts/own.js';
import type { JsonSchema } from '../../../rest-adapter/src/contract/json-schema.js';
import { createAjv } from '../../../rest-adapter/src/contract/request-validation.js';
import { loadOperation } from '../../../rest-adapter/src/operations.js';
import { ROUTES, type Route } from '../../../rest-adapter/src/routes/index.js';
import type { UploadedFile } from '../../../rest-adapter/src/routes/route.js';
import { SUPERGRAPH_PATH } from '../../../schema/compose.js';
import { contractChecker } from '../contract.js';
import { encodable, HOSTILE_STRINGS, PROTOTYPE_NAMES } from './corpus.js';
import { seedsOf } from './seeds.js';
import { startTestStack, type TestStack } from '../harness.js';

// ---------------------------------------------------------------------------------------------
// Budget: about 60-90 s for the file on a two-core machine.

/** Random runs from each seed (the committed ones in CI, fresh ones under `npm run fuzz`). */
const RANDOM_RUNS_PER_ROUTE = 4;
const RANDOM_RUNS_PER_MUTATION = 2;
/** Fresh random seeds per route and mutation (`npm run fuzz -- --seeds N`); 0 replays the committed seeds. */
const FRESH_SEEDS = Number(process.env.FUZZ_FRESH_SEEDS ?? '0');
const TEST_TIMEOUT_MS = 60_000 * Math.max(1, Math.ceil(FRESH_SEEDS / 2));
if (FRESH_SEEDS > 0) console.log(`fuzz: FUZZ_FRESH_SEEDS=${FRESH_SEEDS}: fresh random seeds, not the committed ones`);
/** Deterministic cases of one mutation beyond this many are thinned out evenly (wide inputs). */
const MAX_DETERMINISTIC_PER_MUTATION = 45;

// ---------------------------------------------------------------------------------------------
// What a refusal may legitimately change: the one place that lists it.

/**
 * Documented side effects of refused requests, excluded from the "nothing changed" comparison.
 * Whole collections, or fields of the documents of a collection (`<subgraph>.<collection>`).
 */
/** The subgraphs whose outboxes carry audit records (compliance's own acts: the restriction writes). */
const AUDITING_SUBGRAPHS = ['user', 'cards', 'payments', 'compliance'] as const;

const REFUSAL_SIDE_EFFECTS: {
  collections: Record<string, string>;
  fields: Record<string, { fields: string[]; why: string }>;
  documents: Record<string, { except: Document; why: string }>;
} = {
  collections: {
    // Failed logins (end user and aggregator), wrong old passwords and wrong recovery codes count
    // toward the actor's lock, after a slot reserved in the same document while the credential is
    // checked (docs/decisions.md: "Token lifetime and lockout"); a registration without deviceTag, preSegment
    // or deviceData locks the prospect (the spec's POST /prospect/registration errors).
    'user.lockouts': 'failure counters, slots and locks of refused logins and registrations',
    // Refused logins and other refused security-relevant acts are audited (platform/messaging/audit.ts).
    'compliance.audit_log': 'the audit log records refusals',
  },
  fields: {
    // A wrong confirmation code counts a try, after a slot (a lease) reserved while it is compared
    // (a write, so a new version); five wrong tries burn the code (docs: Confirmations).
    'user.confirmations': { fields: ['attempts', 'leases', 'version'], why: 'tries of a confirmation code' },
    // Likewise for the recovery code of a new device (docs: Recovery).
    'user.recoveryCodes': { fields: ['attempts', 'leases', 'version'], why: 'tries of a recovery code' },
    // The mark an outbox's forwarding dispatcher sets once it has carried an event, in the background.
    ...Object.fromEntries(
      AUDITING_SUBGRAPHS.map((name) => [`${name}.outbox`, { fields: ['dtsForwarded'], why: 'marks of events forwarded to compliance' }]),
    ),
    // Compliance's own events (a restriction an earlier, accepted request changed, and its audit
    // record) are marked carried in the background, possibly while a later request is refused.
    'compliance.outbox': { fields: ['dtsForwarded', 'dtsPublished'], why: 'marks of events carried to the bus and to the audit log' },
    // A decided card message is its own outbox event: the decisions lane marks an earlier, accepted
    // one carried (to the bus, the advice log and payments) in the background (docs/cards.md).
    'cards.cardMessages': { fields: ['dtsPublished'], why: 'marks of decided card messages carried by the decisions lane' },
  },
  documents: Object.fromEntries(
    // The audit records of refusals travel to compliance as events of the acting subgraph's outbox.
    AUDITING_SUBGRAPHS.map((name) => [
      `${name}.outbox`,
      { except: { type: 'audit.recorded' }, why: 'audit records of refusals, on their way to the audit log' },
    ]),
  ),
};

// ---------------------------------------------------------------------------------------------
// Hostile values.

/** A JSON literal spliced into the request text as is: numbers JSON.stringify cannot write (-0, 1e400, 2^53+1). */
class RawJson {
  constructor(readonly text: string) {}
  toJSON(): string {
    return `\u0000RAW:${this.text}\u0000`;
  }
}
/** A path segment sent exactly as given (a malformed percent escape), not percent-encoded by the test. */
class RawSegment {
  constructor(readonly text: string) {}
}
/** The key that becomes `__proto__` in the request text (an object literal cannot have it as its own key). */
const PROTO_KEY = '__fuzz_proto__';

/** Request text from a value with RawJson members and PROTO_KEY keys. */
function encodeJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/"\\u0000RAW:([^"\\]*)\\u0000"/g, (_, text: string) => text)
    .replaceAll(`"${PROTO_KEY}"`, '"__proto__"');
}

interface Hostile {
  label: string;
  value: unknown;
}
const h = (label: string, value: unknown): Hostile => ({ label, value });

const OVERSIZED = 'A'.repeat(100_000);
const SCRIPT = '<script>alert(1)</script>';
const SCRIPT_QUOTES = `"'><script>alert(\`x\`)</script>\\;--{{x}}\${x}`;
const CONTROL = 'a\u0000b\u0007\u001b[31mc\r\n\uD800d';
const UNICODE = 'Zoë Ω 中文 👩‍👩‍👧‍👦🏦 \u202Eevil\u202C\u200B\uFEFF\u0301';
function deeplyNested(depth: number): unknown {
  let value: unknown = 'bottom';
  for (let i = 0; i < depth; i += 1) value = { a: value };
  return value;
}

const STRING_CASES: Hostile[] = [
  h('null', null),
  h('a number', 12345),
  h('a boolean', true),
  h('an array', ['x']),
  h('a Mongo operator object', { $gt: '' }),
  h('an oversized string (100k)', OVERSIZED),
  h('a script tag with quotes and backslashes', SCRIPT_QUOTES),
  h('unicode with emoji, RTL and zero-width marks', UNICODE),
  h('NUL, control characters and a lone surrogate', CONTROL),
  h('an empty string', ''),
  ...PROTOTYPE_NAMES.map((name) => h(`the inherited name ${name}`, name)),
];
const NUMBER_CASES: Hostile[] = [
  h('null', null),
  h('a numeric string', '12'),
  h('a boolean', true),
  h('an array', [1]),
  h('a Mongo operator object', { $gt: 0 }),
  h('1e308', 1e308),
  h('-1', -1),
  h('-0', new RawJson('-0')),
  h('1e400 (Infinity once parsed)', new RawJson('1e400')),
  h('2^53+1', new RawJson('9007199254740993')),
  h('a fraction of a cent', 0.001),
  h('a NaN-like string', 'NaN'),
];
const BOOLEAN_CASES: Hostile[] = [h('null', null), h('the string "true"', 'true'), h('1', 1), h('an array', [true]), h('an object', {})];
const OBJECT_CASES: Hostile[] = [
  h('null', null),
  h('a string', SCRIPT),
  h('a number', 1),
  h('an array', []),
  h('an object nested 150 deep', deeplyNested(150)),
  h('a Mongo $where', { $where: 'sleep(1000)' }),
  h('a member name with a dot', { 'a.b': 1 }),
  h('a member name with NUL', { 'a\u0000b': 1 }),
  h('a nested member name with a dollar', { list: [{ $set: { x: 1 } }] }),
  h('empty, script-tag and unicode member names', { '': 1, [SCRIPT]: UNICODE, [UNICODE]: SCRIPT }),
];
const ARRAY_CASES: Hostile[] = [
  h('null', null),
  h('a string', 'x'),
  h('an object', {}),
  h('an array with a null item', [null]),
  h(
    'an array of 1000 items',
    Array.from({ length: 1000 }, () => 'x'),
  ),
  h('an array with a Mongo operator object', [{ $gt: '' }]),
];
/** Properties a client should not be able to smuggle in: prototype pollution, unknown members, very many keys. */
const EXTRA_PROPERTIES: Hostile[] = [
  h('a __proto__ member', { [PROTO_KEY]: { polluted: true, isAdmin: true } }),
  h('a constructor.prototype member', { constructor: { prototype: { polluted: true } } }),
  h('an unknown member with a script tag', { unknownFuzzMember: SCRIPT, _id: 'fuzz_forced_id', SvcUserId: DEMO.friendUserId }),
  h('300 unknown members', Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`k${i}`, i]))),
];
/** Bodies that are not what the route reads. */
const MALFORMED_BODIES: Hostile[] = [
  h('an empty body', ''),
  h('a truncated object', '{"a":'),
  h('two documents', '{"a":1}{"b":2}'),
  h('a byte order mark', '\uFEFF{}'),
  h('the literal null', 'null'),
  h('a bare string', '"<script>"'),
  h('the wrong container', '__WRONG_CONTAINER__'),
  h('an object nested 10000 deep', `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`),
  h('escaped lone surrogates and NUL', '{"a":"\\ud800\\udfff\\uDBFF","b":"\\u0000"}'),
  h('duplicate keys', '{"__DUP__":1,"__DUP__":{"$gt":""}}'),
];
const PATH_CASES: Hostile[] = [
  h('a script tag with quotes', `${SCRIPT}"'`),
  h('a Mongo operator and a regular-expression wildcard', '$gt.*'),
  h('unicode with emoji and RTL marks', UNICODE),
  h('NUL', 'a\u0000b'),
  h('a long segment (3000)', 'x'.repeat(3000)),
  h('only spaces', '   '),
  h('an encoded slash', 'a/b'),
  h('a malformed percent escape', new RawSegment('%E0%A4%A')),
  h('a bare percent', new RawSegment('%')),
  h('a percent escape of NUL', new RawSegment('%00')),
  // The path's limit: a 100k segment would stop at the HTTP server's header limit.
  ...HOSTILE_STRINGS.filter((c) => c.value.length < 4096 && encodable(c.value)).map((c) => h(c.label, c.value)),
];
const CREDENTIAL_CASES: Hostile[] = [h('a script tag with quotes', `${SCRIPT}' OR '1'='1`), h('a 4096-character value', 'x'.repeat(4096))];
/** For the JWT header: a token that names the demo merchant but is not signed. */
const UNSIGNED_JWT = h('an unsigned JWT', 'eyJhbGciOiJub25lIn0.eyJ0eXAiOiJtZXJjaGFudCIsInN1YiI6ImRlbW9fbWVyY2hhbnQifQ.');

/** Random hostile values: any JSON, any code point, lone surrogates, huge integers, the fixed cases. */
const FIXED_VALUES = [...STRING_CASES, ...NUMBER_CASES, ...OBJECT_CASES, ...ARRAY_CASES].map((c) => c.value);
const randomValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => `x${String.fromCharCode(code)}y`),
  fc.integer(),
  fc.double(),
  fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map((n) => new RawJson(n.toString())),
  fc.boolean(),
  fc.constant(null),
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(...FIXED_VALUES),
  fc.constantFrom(...HOSTILE_STRINGS.map((c) => c.value)),
);
const preview = (value: unknown): string => {
  // JSON.stringify answers undefined for undefined, though its type says string.
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- see above.
  const text = value instanceof RawJson ? value.text : value instanceof RawSegment ? value.text : (JSON.stringify(value) ?? String(value));
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
};

// ---------------------------------------------------------------------------------------------
// Paths into values.

type Path = Array<string | number>;
const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
const pathText = (p: Path) =>
  p.reduce<string>((text, part) => (typeof part === 'number' ? `${text}[${part}]` : text ? `${text}.${part}` : part), '') || '(body)';

/** A copy of `root` with `value` at `p` (containers created on the way); `undefined` removes the member. */
function withValue(root: unknown, p: Path, value: unknown): unknown {
  if (p.length === 0) return value;
  const [head, ...rest] = p as [string | number, ...Path];
  if (typeof head === 'number') {
    const list = Array.isArray(root) ? [...(root as unknown[])] : [];
    const next = withValue(list[head], rest, value);
    if (next === undefined) list.splice(head, 1);
    else list[head] = next;
    return list;
  }
  const object: Record<string, unknown> = isRecord(root) ? { ...root } : {};
  const next = withValue(object[head], rest, value);
  if (next === undefined) return Object.fromEntries(Object.entries(object).filter(([name]) => name !== head));
  object[head] = next;
  return object;
}
function valueAt(root: unknown, p: Path): unknown {
  let current = root;
  for (const part of p) {
    if (typeof part === 'number') current = Array.isArray(current) ? (current as unknown[])[part] : undefined;
    else current = isRecord(current) ? current[part] : undefined;
  }
  return current;
}

// ---------------------------------------------------------------------------------------------
// JSON Schema → field targets.

type Kind = 'string' | 'number' | 'boolean' | 'object' | 'array' | 'any';
/** The schema without its null branch. */
function unwrap(schema: JsonSchema): JsonSchema {
  if (Array.isArray(schema.anyOf)) {
    const branches = (schema.anyOf as JsonSchema[]).filter((branch) => branch.type !== 'null');
    if (branches.length === 1) return branches[0]!;
  }
  return schema;
}
function kindOf(schema: JsonSchema): Kind {
  const s = unwrap(schema);
  const types = (Array.isArray(s.type) ? (s.type as string[]) : typeof s.type === 'string' ? [s.type] : []).filter((t) => t !== 'null');
  const type = types.length === 1 ? types[0] : Array.isArray(s.enum) ? typeof (s.enum as unknown[]).find((v) => v !== null) : undefined;
  if (type === 'integer' || type === 'number') return 'number';
  if (type === 'string' || type === 'boolean' || type === 'object' || type === 'array') return type;
  return 'any';
}
interface FieldTarget {
  path: Path;
  kind: Kind;
  present: boolean;
  enumValues: unknown[];
}
function fieldTargets(schema: JsonSchema, base: unknown, at: Path = [], depth = 0, out: FieldTarget[] = []): FieldTarget[] {
  const s = unwrap(schema);
  if (isRecord(s.properties)) {
    for (const [name, property] of Object.entries(s.properties as Record<string, JsonSchema>)) {
      const child = [...at, name];
      const childBase = valueAt(base, [name]);
      const kind = kindOf(property);
      out.push({ path: child, kind, present: childBase !== undefined, enumValues: (unwrap(property).enum as unknown[] | undefined) ?? [] });
      // Nested members of an absent optional object are reached one level down only.
      if ((kind === 'object' || kind === 'array') && depth < 3 && (childBase !== undefined || depth < 1))
        fieldTargets(property, childBase, child, depth + 1, out);
    }
  } else if (isRecord(s.items) && depth < 3) {
    const item = s.items as JsonSchema;
    const child = [...at, 0];
    const itemBase = valueAt(base, [0]);
    const kind = kindOf(item);
    out.push({ path: child, kind, present: itemBase !== undefined, enumValues: (unwrap(item).enum as unknown[] | undefined) ?? [] });
    if (kind === 'object' || kind === 'array') fieldTargets(item, itemBase, child, depth + 1, out);
  }
  return out;
}
/** Members of items of nested lists (`newAddresses[0].city`): the wrong types and one of each kind of hostile text. */
const DEEP_STRING_CASES: Hostile[] = [
  h('null', null),
  h('a number', 12345),
  h('a Mongo operator object', { $gt: '' }),
  h('an oversized string (100k)', OVERSIZED),
  h('a hostile string (script tag, unicode, NUL, lone surrogate)', `${SCRIPT_QUOTES}${UNICODE}${CONTROL}`),
  ...PROTOTYPE_NAMES.map((name) => h(`the inherited name ${name}`, name)),
];
function casesOfKind(kind: Kind, enumValues: unknown[], deep: boolean): Hostile[] {
  const firstEnum = enumValues.find((v): v is string => typeof v === 'string');
  if (deep && kind === 'string') return DEEP_STRING_CASES;
  switch (kind) {
    case 'string':
      return firstEnum
        ? [
            ...STRING_CASES,
            h('an enum value in another case', firstEnum.toUpperCase() === firstEnum ? firstEnum.toLowerCase() : firstEnum.toUpperCase()),
          ]
        : STRING_CASES;
    case 'number':
      return NUMBER_CASES;
    case 'boolean':
      return BOOLEAN_CASES;
    case 'object':
      return OBJECT_CASES;
    case 'array':
      return ARRAY_CASES;
    default:
      return [
        ...STRING_CASES.slice(0, 8),
        ...NUMBER_CASES.slice(5, 10),
        ...PROTOTYPE_NAMES.map((name) => h(`the inherited name ${name}`, name)),
      ];
  }
}

// ---------------------------------------------------------------------------------------------
// The databases: per-collection hashes, refreshed where a write command went.

interface CollectionState {
  count: number;
  digest: string;
  /** Document digests by EJSON _id, for naming what changed. */
  docs: Map<string, string>;
}
type DbState = ReadonlyMap<string, CollectionState>;

/** Commands that do not change data; any other command marks its collection as changed. */
const READ_COMMANDS = new Set([
  'find',
  'getMore',
  'killCursors',
  'count',
  'distinct',
  'listCollections',
  'listIndexes',
  'listDatabases',
  'ping',
  'hello',
  'isMaster',
  'ismaster',
  'buildInfo',
  'endSessions',
  'dbStats',
  'collStats',
  'explain',
  'serverStatus',
  'getParameter',
  'saslStart',
  'saslContinue',
  'connectionStatus',
  'getMore',
]);

class DatabaseTracker {
  private readonly subgraphOf = new Map<string, SubgraphName>();
  private readonly dirty = new Set<string>();
  private readonly inFlight = new Set<string>();
  private lastWriteAt = 0;
  private state = new Map<string, CollectionState>();
  private readonly detach: Array<() => void> = [];

  constructor(private readonly stack: TestStack) {
    for (const name of SUBGRAPH_NAMES) this.subgraphOf.set(stack.mongo.databaseName(name), name);
    const clients = new Set<MongoClient>(SUBGRAPH_NAMES.map((name) => stack.mongo.db(name).client));
    let clientNumber = 0;
    for (const client of clients) {
      const prefix = `${(clientNumber += 1)}:`;
      const started = (event: CommandStartedEvent) => {
        const subgraph = this.subgraphOf.get(event.databaseName);
        if (!subgraph || !this.isWrite(event)) return;
        const target: unknown = event.command[event.commandName];
        const key = typeof target === 'string' ? `${subgraph}.${target}` : `${subgraph}.*`;
        if (this.excluded(key) || this.onlyExcludedContent(key, event)) return;
        this.dirty.add(key);
        this.inFlight.add(`${prefix}${event.requestId}`);
        this.lastWriteAt = Date.now();
      };
      const ended = (event: CommandSucceededEvent | CommandFailedEvent) => {
        if (this.inFlight.delete(`${prefix}${event.requestId}`)) this.lastWriteAt = Date.now();
      };
      client.on('commandStarted', started);
      client.on('commandSucceeded', ended);
      client.on('commandFailed', ended);
      this.detach.push(() => {
        client.off('commandStarted', started);
        client.off('commandSucceeded', ended);
        client.off('commandFailed', ended);
      });
    }
  }

  private isWrite(event: CommandStartedEvent): boolean {
    if (event.commandName === 'aggregate')
      return (
        JSON.stringify(event.command.pipeline ?? []).includes('"$out"') || JSON.stringify(event.command.pipeline ?? []).includes('"$merge"')
      );
    return !READ_COMMANDS.has(event.commandName);
  }

  private excluded(key: string): boolean {
    return Object.hasOwn(REFUSAL_SIDE_EFFECTS.collections, key);
  }

  /**
   * Whether a write touches only what the comparison leaves out of a collection: inserts of
   * excluded documents only, or updates that set excluded fields only. Re-reading the collection
   * after such a write could find no difference, and the outboxes grow with every request.
   */
  private onlyExcludedContent(key: string, event: CommandStartedEvent): boolean {
    const except = ownValue(REFUSAL_SIDE_EFFECTS.documents, key)?.except;
    const fields = ownValue(REFUSAL_SIDE_EFFECTS.fields, key)?.fields ?? [];
    const command = event.command as { documents?: Document[]; updates?: Array<{ u?: Document }> };
    if (event.commandName === 'insert' && except && command.documents?.length) {
      return command.documents.every((doc) => Object.entries(except).every(([name, value]) => doc[name] === value));
    }
    if (event.commandName === 'update' && command.updates?.length) {
      return command.updates.every(
        ({ u }) =>
          u !== undefined &&
          Object.keys(u).length === 1 &&
          u.$set !== undefined &&
          Object.keys(u.$set as Document).every((name) => fields.includes(name)),
      );
    }
    return false;
  }

  stop(): void {
    for (const off of this.detach) off();
  }

  /** Waits until no write command is under way. */
  private async idle(): Promise<void> {
    const until = Date.now() + 5000;
    while (this.inFlight.size > 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 2));
  }

  /** The time of the last write command seen (started or finished). */
  lastWrite(): number {
    return this.lastWriteAt;
  }

  /** Waits until writes stop: the follow-ups of a success (events marked published, deliveries) run just after it answers. */
  async quiesce(quietMs = 5): Promise<void> {
    const until = Date.now() + 3000;
    for (;;) {
      await this.idle();
      const quiet = Date.now() - this.lastWriteAt;
      if (quiet >= quietMs || Date.now() > until) return;
      await new Promise((resolve) => setTimeout(resolve, quietMs - quiet));
    }
  }

  private async hash(subgraph: SubgraphName, collection: string): Promise<CollectionState> {
    const stripped = ownValue(REFUSAL_SIDE_EFFECTS.fields, `${subgraph}.${collection}`)?.fields ?? [];
    const except = ownValue(REFUSAL_SIDE_EFFECTS.documents, `${subgraph}.${collection}`)?.except;
    const docs = await this.stack.mongo
      .db(subgraph)
      .collection(collection)
      .find(except ? { $nor: [except] } : {})
      .sort({ _id: 1 })
      .toArray();
    const all = createHash('sha256');
    const byId = new Map<string, string>();
    for (const doc of docs) {
      const kept: Document = Object.fromEntries(Object.entries(doc).filter(([name]) => !stripped.includes(name)));
      const digest = createHash('sha256').update(BSON.serialize(kept)).digest('hex');
      byId.set(BSON.EJSON.stringify(doc._id), digest);
      all.update(digest);
    }
    return { count: docs.length, digest: docs.length === 0 ? 'empty' : all.digest('hex'), docs: byId };
  }

  private async collectionsOf(subgraph: SubgraphName): Promise<string[]> {
    const listed = await this.stack.mongo.db(subgraph).listCollections({}, { nameOnly: true }).toArray();
    return listed.map((c) => c.name).filter((name) => !name.startsWith('system.') && !this.excluded(`${subgraph}.${name}`));
  }

  /** The state now: collections written since the last call are read again, the others kept. */
  async current(): Promise<DbState> {
    await this.idle();
    if (this.dirty.size === 0) return this.state;
    const keys = [...this.dirty];
    this.dirty.clear();
    const next = new Map(this.state);
    for (const key of keys) {
      const cut = key.indexOf('.');
      const subgraph = key.slice(0, cut) as SubgraphName;
      const collection = key.slice(cut + 1);
      const names = collection === '*' ? await this.collectionsOf(subgraph) : [collection];
      for (const name of names) next.set(`${subgraph}.${name}`, await this.hash(subgraph, name));
    }
    this.state = next;
    return next;
  }

  /** Every collection of the four databases, read in full. */
  async full(): Promise<DbState> {
    await this.quiesce();
    const next = new Map<string, CollectionState>();
    for (const subgraph of SUBGRAPH_NAMES) {
      for (const name of await this.collectionsOf(subgraph)) next.set(`${subgraph}.${name}`, await this.hash(subgraph, name));
    }
    this.dirty.clear();
    this.state = next;
    return next;
  }
}

/** What differs between two states, or null. */
function diffStates(before: DbState, after: DbState): string | null {
  if (before === after) return null;
  const empty: CollectionState = { count: 0, digest: 'empty', docs: new Map() };
  const changes: string[] = [];
  for (const key of new Set([...before.keys(), ...after.keys()])) {
    const a = before.get(key) ?? empty;
    const b = after.get(key) ?? empty;
    if (a.digest === b.digest) continue;
    const added = [...b.docs.keys()].filter((id) => !a.docs.has(id));
    const removed = [...a.docs.keys()].filter((id) => !b.docs.has(id));
    const changed = [...b.docs.keys()].filter((id) => a.docs.has(id) && a.docs.get(id) !== b.docs.get(id));
    const ids = (list: string[]) => list.slice(0, 3).join(', ') + (list.length > 3 ? ` and ${list.length - 3} more` : '');
    changes.push(
      `${key} (${a.count} → ${b.count} documents${added.length ? `; added ${ids(added)}` : ''}${removed.length ? `; removed ${ids(removed)}` : ''}${changed.length ? `; changed ${ids(changed)}` : ''})`,
    );
  }
  return changes.length ? changes.join('; ') : null;
}

// ---------------------------------------------------------------------------------------------
// Credentials.

const SERVICE_KEYS: Record<string, string> = {
  'card-processor': 'fuzz-card-processor-service-key-0123456789',
  'ach-processor': 'fuzz-ach-processor-service-key-01234567890',
  cards: 'fuzz-cards-service-key-0123456789abcdefghij',
  payments: 'fuzz-payments-service-key-0123456789abcdef',
  operator: 'fuzz-operator-service-key-0123456789abcdefg',
};
type CredentialKind =
  'none' | 'user' | 'freshUser' | 'prospect' | 'aggregator' | 'throwawayAggregator' | 'merchant' | 'customer' | `service:${string}`;

/** A user name and an aggregator login nobody has: the login routes are fuzzed without locking a real actor. */
const NOBODY_USER = 'fuzz.nobody';
const NOBODY_LOGIN = 'fuzz_nobody';
const THROWAWAY_LOGIN = 'fuzz_aggregator';

/**
 * The credential each root field takes where the route's header does not say it (a `token` may
 * be an end user's or a prospect's), and for every mutation. Credentials that an answer spends
 * (logout, a password change, a registration) are the test's own: fresh or throwaway ones.
 */
const CREDENTIAL_OF_FIELD: Record<string, CredentialKind> = {
  modifyCard: 'user',
  setCardStatus: 'user',
  authorizeCardMessage: 'service:card-processor',
  configureWebhook: 'aggregator',
  resendCardWebhookDelivery: 'aggregator',
  enableCardWebhook: 'aggregator',
  runWebhookSandbox: 'aggregator',
  addCondorCard: 'aggregator',
  initializeCustomer: 'aggregator',
  generateDocument: 'aggregator',
  uploadDocument: 'aggregator',
  updateApplication: 'aggregator',
  applyAchActivity: 'service:payments',
  appendAuditRecords: 'service:payments',
  modifyTransaction: 'user',
  createBeneficiary: 'user',
  modifyBeneficiary: 'user',
  deleteBeneficiary: 'user',
  undoBeneficiaryChange: 'user',
  recordIouTransaction: 'user',
  acceptIouTransaction: 'user',
  cancelIouTransaction: 'user',
  saveMerchant: 'aggregator',
  merchantToken: 'aggregator',
  customerToken: 'none',
  createPaymentLink: 'merchant',
  sendPaymentLink: 'merchant',
  cancelPaymentLink: 'merchant',
  uploadMerchantLogo: 'merchant',
  refundPaymentLink: 'merchant',
  resendDelivery: 'merchant',
  enableMerchantWebhook: 'aggregator',
  recordAchSettlement: 'service:ach-processor',
  recordAchDebit: 'service:ach-processor',
  recordAchReturn: 'service:ach-processor',
  recordCardTransaction: 'service:cards',
  recordCardTransactions: 'service:cards',
  holdCardFunds: 'service:cards',
  releaseCardHolds: 'service:cards',
  openCheckingAccount: 'service:cards',
  setRestriction: 'service:operator',
  removeRestriction: 'service:operator',
  placeProceduralRestriction: 'service:operator',
  liftProceduralRestriction: 'service:operator',
  login: 'none',
  logout: 'freshUser',
  updateUser: 'user',
  confirmEmail: 'user',
  confirmMobile: 'user',
  syncAlerts: 'user',
  submitProspectData: 'none',
  uploadProspectImage: 'prospect',
  registerDevice: 'prospect',
  requestRecoveryCode: 'user',
  connectOnboardingSocket: 'prospect',
  aggregatorGetToken: 'none',
  aggregatorChangePassword: 'throwawayAggregator',
  // Queries behind GET routes.
  paymentLink: 'customer',
};

interface Envelope<T> {
  data: T;
}

class Credentials {
  user = '';
  aggregator = '';
  merchant = '';
  customer = '';
  documentId = 'document_id_from_generate';
  private throwaway = { password: DEMO.aggregatorPassword as string, token: '' };
  private prospect = { token: '', deviceTag: '' };
  private serial = 0;

  constructor(
    private readonly stack: TestStack,
    private readonly tracker: () => DatabaseTracker,
  ) {}

  async init(): Promise<void> {
    const { stack } = this;
    this.user = await stack.loginDemo();
    this.aggregator = (
      await stack.rest<Envelope<{ token: string }>>('POST', '/auth/get-token', {
        body: { user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword } },
      })
    ).body.data.token;
    this.merchant = (
      await stack.rest<Envelope<{ token: string }>>('POST', '/payment-link/merchant/get-token', {
        headers: { 'x-svc-token': this.aggregator },
        body: { svcMerchantId: DEMO.merchantId },
      })
    ).body.data.token;
    this.customer = (
      await stack.rest<Envelope<{ token: string }>>('POST', '/public/customer/payment/link', { body: { link: DEMO.sentLinkCode } })
    ).body.data.token;
    const generated = await stack.rest<Envelope<{ documentId: string }>>('POST', '/akepa/document/generate', {
      headers: { 'x-svc-token': this.aggregator },
      body: { customerId: 'demo_customer_2', entityId: 'demo_customer_2', documentType: 'passport' },
    });
    if (generated.status === 200) this.documentId = generated.body.data.documentId;
    // A second user of the demo aggregator, whose password the fuzzing may change and whose login it may lock.
    const users = stack.mongo.db('user').collection<{ _id: string; login: string }>('aggregatorUsers');
    const demo = await users.findOne({ _id: DEMO.aggregatorLogin.toLowerCase() });
    if (!demo) throw new Error('the demo aggregator user is missing');
    await users.insertOne({ ...demo, _id: THROWAWAY_LOGIN, login: THROWAWAY_LOGIN });
    for (const [name, token] of [
      ['user', this.user],
      ['aggregator', this.aggregator],
      ['merchant', this.merchant],
      ['customer', this.customer],
    ] as const) {
      if (!token) throw new Error(`no ${name} credential`);
    }
  }

  throwawayPassword(): string {
    return this.throwaway.password;
  }
  nextPassword(): string {
    return this.throwaway.password === 'Fuzz#Pass2027' ? 'Fuzz#Pass2028' : 'Fuzz#Pass2027';
  }
  async prospectDeviceTag(): Promise<string> {
    if (!this.prospect.token) await this.newProspect();
    return this.prospect.deviceTag;
  }

  private async newProspect(): Promise<void> {
    const deviceTag = `fuzz-device-${process.pid}-${(this.serial += 1)}`;
    const response = await this.stack.rest<{ token: string }>('POST', '/prospect/data', {
      body: { deviceTag, preSegment: 'retail', firstName: 'Fuzz' },
    });
    if (response.status !== 200) throw new Error(`no prospect: ${response.status} ${JSON.stringify(response.body)}`);
    this.prospect = { token: response.body.token, deviceTag };
    await this.tracker().quiesce();
  }

  private async loginThrowaway(): Promise<void> {
    const response = await this.stack.rest<Envelope<{ token: string }>>('POST', '/auth/get-token', {
      body: { user: { login: THROWAWAY_LOGIN, password: this.throwaway.password } },
    });
    // Locked by wrong old passwords: the fuzzing goes on with a token that is refused.
    this.throwaway.token = response.status === 200 ? response.body.data.token : 'fuzz-throwaway-token-unavailable';
    await this.tracker().quiesce();
  }

  /** The credential header of a kind (logging in where the kind needs a fresh credential). */
  async headers(kind: CredentialKind): Promise<Record<string, string>> {
    switch (kind) {
      case 'none':
        return {};
      case 'user':
        return { token: this.user };
      case 'freshUser': {
        // The test channel: a fresh session of the demo user without paying for a password hash.
        const login = await this.stack.rest<{ token: string }>('PUT', '/token', {
          body: { channel: 'test', deviceTag: DEMO.testDeviceTag },
        });
        if (login.status !== 200) throw new Error(`no fresh session: ${login.status}`);
        const { token } = login.body;
        await this.tracker().quiesce();
        return { token };
      }
      case 'prospect':
        if (!this.prospect.token) await this.newProspect();
        return { token: this.prospect.token };
      case 'aggregator':
        return { 'x-svc-token': this.aggregator };
      case 'throwawayAggregator':
        if (!this.throwaway.token) await this.loginThrowaway();
        return { 'x-svc-token': this.throwaway.token };
      case 'merchant':
        return { 'x-svc-jwtoken': this.merchant };
      case 'customer':
        return { 'x-svc-jwtoken': this.customer };
      default: {
        const key = ownValue(SERVICE_KEYS, kind.slice('service:'.length));
        if (!key) throw new Error(`no service key for ${kind}`);
        return { 'x-service-key': key };
      }
    }
  }

  /**
   * After an answer: a credential it spent (a registration, a password change) or refused is
   * replaced before the next request. True when that happened (the databases changed meanwhile).
   */
  async after(
    kind: CredentialKind,
    field: string,
    outcome: { succeeded: boolean; unauthenticated: boolean; newPassword: unknown },
  ): Promise<boolean> {
    if (kind === 'prospect' && ((outcome.succeeded && field === 'registerDevice') || outcome.unauthenticated)) {
      this.prospect.token = '';
      return true;
    }
    if (kind === 'throwawayAggregator' && (outcome.succeeded || outcome.unauthenticated)) {
      if (outcome.succeeded && typeof outcome.newPassword === 'string') this.throwaway.password = outcome.newPassword;
      this.throwaway.token = '';
      return true;
    }
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Judging answers.

/** Exception text that must not reach a client. */
const LEAK =
  /TypeError|ReferenceError|RangeError|MongoServerError|MongoError|BSONError|Maximum call stack|Cannot read propert|is not a function|is not iterable|\bat [\w.<>]+ \(|node_modules|\.[jt]s:\d+:\d+/;

function errorOf(body: unknown): { code?: string; message?: string } {
  if (!isRecord(body)) return {};
  const error = isRecord(body.error) ? body.error : body;
  return {
    code: typeof error.code === 'string' ? error.code : undefined,
    message: typeof error.message === 'string' ? error.message : undefined,
  };
}

/** The 500s a spec prescribes for a route (an unknown login channel; DELETE /token without a token); INTERNAL is never one. */
function prescribedFiveHundreds(route: Route): Set<string> {
  const codes = Object.entries(route.statuses ?? {})
    .filter(([code, status]) => status === 500 && code !== 'INTERNAL' && code !== 'UNAVAILABLE')
    .map(([code]) => code);
  if (route.missingCredentialStatus === 500) codes.push('TOKEN_MISSING');
  return new Set(codes.flatMap((code) => [code, code.toLowerCase()]));
}

const prototypePolluted = () => ['polluted', 'isAdmin'].some((key) => key in Object.prototype);

// ---------------------------------------------------------------------------------------------
// The run.

interface Stats {
  restRequests: number;
  restRefused: number;
  restSucceeded: number;
  graphqlRequests: number;
  graphqlRefused: number;
  graphqlSucceeded: number;
  routes: number;
  mutations: number;
  restMs: number;
  graphqlMs: number;
  restCasesPerField: number[];
  graphqlCasesPerLeaf: number[];
  skipped: string[];
}

/**
 * Random runs of a probe (fast-check) from each seed of `scope` (a route as `METHOD /path`, or a
 * mutation's name): the committed seeds, or fresh ones under `npm run fuzz`. The first
 * counterexample of each seed becomes a failure that names the seed, rather than a throw.
 */
async function randomRuns<T>(
  scope: string,
  arbitrary: fc.Arbitrary<T>,
  numRuns: number,
  probe: (value: T) => Promise<string | null | undefined>,
  failures: string[],
): Promise<void> {
  const seeds =
    FRESH_SEEDS > 0
      ? Array.from({ length: FRESH_SEEDS }, () => ({ seed: randomInt(2 ** 31 - 1), numRuns }))
      : seedsOf(scope).map((s) => ({ seed: s.seed, numRuns: s.numRuns ?? numRuns }));
  for (const { seed, numRuns: runs } of seeds) {
    try {
      await fc.assert(
        fc.asyncProperty(arbitrary, async (value) => {
          const failure = await probe(value);
          if (failure) throw new Error(failure);
        }),
        { seed, numRuns: runs },
      );
    } catch (error) {
      const text = (error as Error).message.split('\n').slice(0, 6).join(' | ');
      failures.push(`seed ${seed} (scope "${scope}", ${runs} runs): ${text}`);
      if (FRESH_SEEDS > 0) console.log(`fuzz: failing seed { seed: ${seed}, scope: '${scope}', numRuns: ${runs} }`);
    }
  }
}

/** Defines the fuzz tests of one part (REST routes, or GraphQL mutations), each part in its own test file so the two run side by side. */
export function fuzzSuite(part: 'rest' | 'graphql'): void {
  describe(part === 'rest' ? 'fuzzing every REST route with hostile input' : 'fuzzing every GraphQL mutation with hostile input', () => {
    let stack: TestStack;
    let tracker: DatabaseTracker;
    let credentials: Credentials;
    let outboxDir: string;
    const started = Date.now();
    const stats: Stats = {
      restRequests: 0,
      restRefused: 0,
      restSucceeded: 0,
      graphqlRequests: 0,
      graphqlRefused: 0,
      graphqlSucceeded: 0,
      routes: 0,
      mutations: 0,
      restMs: 0,
      graphqlMs: 0,
      restCasesPerField: [],
      graphqlCasesPerLeaf: [],
      skipped: [],
    };
    /** The state after the last refused request, to catch a write that lands after the answer. */
    let lastRefusal: { label: string; state: DbState } | null = null;

    beforeAll(async () => {
      outboxDir = await mkdtemp(path.join(tmpdir(), 'banking-graph-fuzz-outbox-'));
      stack = await startTestStack({
        SERVICE_KEYS: Object.entries(SERVICE_KEYS)
          .map(([name, key]) => `${name}=${key}`)
          .join(','),
        // One attempt per delivery: no retry lands in the middle of a later request's comparison.
        WEBHOOK_RETRY_SCHEDULE: '0',
        OUTBOX_DIR: outboxDir,
        // Thousands of requests: the test reads no log lines, so the services write only warnings.
        LOG_LEVEL: 'warn',
        // Hostile addresses reach the geocoder.
        GEOCODER_PRELOAD: 'true',
      });
      tracker = new DatabaseTracker(stack);
      credentials = new Credentials(stack, () => tracker);
      await credentials.init();
      await tracker.full();
    }, 60_000);

    afterAll(async () => {
      // Either may be missing when beforeAll failed before assigning it.
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- see above.
      tracker?.stop();
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- see above.
      await stack?.stop();
      if (outboxDir) await rm(outboxDir, { recursive: true, force: true });
      const average = (list: number[]) => (list.length ? (list.reduce((a, b) => a + b, 0) / list.length).toFixed(1) : '0');
      console.log(
        `fuzz: ${stats.routes} routes, ${stats.mutations} mutations; REST ${stats.restRequests} requests in ${(stats.restMs / 1000).toFixed(1)} s (${stats.restRefused} refused, ${stats.restSucceeded} succeeded), ` +
          `GraphQL ${stats.graphqlRequests} requests in ${(stats.graphqlMs / 1000).toFixed(1)} s (${stats.graphqlRefused} refused, ${stats.graphqlSucceeded} succeeded); ` +
          `deterministic cases per field ${average(stats.restCasesPerField)} (REST), ${average(stats.graphqlCasesPerLeaf)} (GraphQL); ${((Date.now() - started) / 1000).toFixed(1)} s` +
          (stats.skipped.length ? `; not sent: ${stats.skipped.slice(0, 5).join(', ')}` : ''),
      );
    });

    // Each test starts afresh: what the test itself does before its first request (a new prospect, a payment link) is no refusal's doing.
    beforeEach(() => {
      lastRefusal = null;
    });

    /** What changed since the last refusal answered (a write that lands after the answer), or null. */
    async function changedSinceLastRefusal(): Promise<string | null> {
      const state = await tracker.current();
      const late = lastRefusal ? diffStates(lastRefusal.state, state) : null;
      const problem =
        late && lastRefusal ? `the database changed after the refused request "${lastRefusal.label}" had answered: ${late}` : null;
      lastRefusal = null;
      return problem;
    }

    /** Ends one route's or mutation's run: a change after its last refusal is a problem too, its time is counted, and it fails with its first problems. */
    async function finishRun(failures: string[], clock: 'restMs' | 'graphqlMs', began: number): Promise<void> {
      const late = await changedSinceLastRefusal();
      if (late) failures.push(late);
      stats[clock] += Date.now() - began;
      expect(failures.slice(0, 15), `${failures.length} problems`).toEqual([]);
    }

    // -------------------------------------------------------------------------------------------
    // REST

    interface RestBase {
      params: Record<string, string>;
      query: Record<string, string>;
      body: unknown;
      /** A multipart route: its base body is a form with a small PNG in field `file`. */
      form: boolean;
    }
    interface RestRequest {
      params: Record<string, string | RawSegment>;
      /** The query string without `?`. */
      query: string;
      /** A JSON value (RawJson allowed), text sent as is, a form, or nothing. */
      body: { json: unknown } | { text: string; contentType?: string } | { form: FormData; boundaryless?: boolean } | null;
      credential: 'valid' | 'missing' | { value: string };
      /** Another of the route's paths. */
      pathIndex?: number;
    }
    interface RestCase {
      label: string;
      build: (base: RestBase) => RestRequest;
    }
    interface RouteContext {
      route: Route;
      name: string;
      field: string;
      credential: CredentialKind;
      bodySchema: ValidateFunction | null;
      paramSchemas: Record<string, ValidateFunction>;
      querySchemas: Record<string, { validate: ValidateFunction; required: boolean }>;
      base: () => Promise<RestBase>;
    }

    const ajv = createAjv();
    const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
    const png = (name = 'logo.png', bytes: Buffer = PNG, type = 'image/png', field = 'file') => {
      const form = new FormData();
      form.append(field, new Blob([new Uint8Array(bytes)], { type }), name);
      return form;
    };

    /** The root field of an operation file: `login`, `modifyCard`, `me`. */
    function rootFieldOf(operation: string): string {
      const document = parse(loadOperation(operation));
      for (const definition of document.definitions) {
        if (definition.kind === GraphQLKind.OPERATION_DEFINITION) {
          const first = definition.selectionSet.selections[0];
          if (first?.kind === GraphQLKind.FIELD) return first.name.value;
        }
      }
      throw new Error(`${operation} selects no field`);
    }

    function credentialOfRoute(route: Route, field: string): CredentialKind {
      if (!route.credential) return 'none';
      const known = ownValue(CREDENTIAL_OF_FIELD, field);
      if (known) return known;
      return route.credential === 'token' ? 'user' : route.credential === 'x-svc-token' ? 'aggregator' : 'merchant';
    }

    /** The route's example, made live: logins of nobody, the test's own prospect and throwaway aggregator. */
    async function liveBody(field: string, example: unknown): Promise<unknown> {
      const body = structuredClone(example);
      if (!isRecord(body)) return body;
      if (field === 'login') body.userName = NOBODY_USER;
      if (field === 'aggregatorGetToken' && isRecord(body.user)) body.user.login = NOBODY_LOGIN;
      if (field === 'aggregatorChangePassword') {
        body.oldPassword = credentials.throwawayPassword();
        body.newPassword = credentials.nextPassword();
      }
      if (field === 'registerDevice' || field === 'connectOnboardingSocket') body.deviceTag = await credentials.prospectDeviceTag();
      return body;
    }

    const contexts = new Map<Route, RouteContext>();
    function routeContext(route: Route): RouteContext {
      let known = contexts.get(route);
      if (!known) {
        known = newRouteContext(route);
        contexts.set(route, known);
      }
      return known;
    }
    function newRouteContext(route: Route): RouteContext {
      const field = rootFieldOf(route.operation);
      const paramNames = [...new Set(route.paths.flatMap((p) => [...p.matchAll(/:(\w+)/g)].map((m) => m[1]!)))];
      return {
        route,
        name: `${route.method} ${route.paths[0]}`,
        field,
        credential: credentialOfRoute(route, field),
        bodySchema: route.requestSchema && !route.graphRefusesMissing ? ajv.compile(route.requestSchema) : null,
        paramSchemas: Object.fromEntries(Object.entries(route.paramSchemas ?? {}).map(([name, schema]) => [name, ajv.compile(schema)])),
        querySchemas: Object.fromEntries(
          Object.entries(route.queryParameters ?? {}).map(([name, q]) => [name, { validate: ajv.compile(q.schema), required: q.required }]),
        ),
        base: async () => {
          const params: Record<string, string> = {
            ...Object.fromEntries(paramNames.map((name) => [name, 'x'])),
            ...(route.example?.params ?? {}),
          };
          if (field === 'uploadDocument') params.documentId = credentials.documentId;
          const fallback = route.body === 'array' ? [] : {};
          const body =
            route.body === 'object' || route.body === 'array' ? await liveBody(field, route.example?.body ?? fallback) : undefined;
          return { params, query: { ...(route.example?.query ?? {}) }, body, form: route.body === 'multipart' };
        },
      };
    }

    /** Whether the request breaks what the route publishes (path, query and body schemas). */
    function breaksSchema(ctx: RouteContext, params: Record<string, string | null>, query: URLSearchParams, text: string | null): boolean {
      for (const [name, validate] of Object.entries(ctx.paramSchemas)) {
        const value = params[name];
        if (value === null || value === undefined || !validate(value)) return true;
      }
      for (const [name, { validate, required }] of Object.entries(ctx.querySchemas)) {
        const value = query.get(name);
        if (value === null ? required : !validate(value)) return true;
      }
      if (ctx.route.body !== 'object' && ctx.route.body !== 'array') return false;
      let body: unknown;
      try {
        body = JSON.parse(text ?? '');
      } catch {
        return true;
      }
      if (body === null || typeof body !== 'object' || Array.isArray(body) !== (ctx.route.body === 'array')) return true;
      return ctx.bodySchema !== null && !ctx.bodySchema(body);
    }

    /** Sends one request and returns what is wrong with the answer, or null. */
    /**
     * After an answer: a refusal must have left the databases as they were (its state is returned,
     * for a write that lands late to be caught); a success's writes are waited out.
     */
    async function settle(refused: boolean, before: DbState, sentAt: number, problems: string[]): Promise<DbState | null> {
      if (!refused) {
        if (tracker.lastWrite() >= sentAt) await tracker.quiesce();
        return null;
      }
      const after = await tracker.current();
      const changed = diffStates(before, after);
      if (changed) problems.push(`refused, yet the database changed: ${changed}`);
      return after;
    }

    async function probeRest(ctx: RouteContext, fuzzCase: RestCase): Promise<string | null> {
      const { route } = ctx;
      const late = await changedSinceLastRefusal();
      const request = fuzzCase.build(await ctx.base());
      const template = route.paths[request.pathIndex ?? 0]!;
      const segments: Record<string, string | null> = {};
      const pathname = template.replace(/:(\w+)/g, (_, name: string) => {
        const value = request.params[name] ?? 'x';
        if (value instanceof RawSegment) {
          try {
            segments[name] = decodeURIComponent(value.text);
          } catch {
            segments[name] = null;
          }
          return value.text;
        }
        segments[name] = value;
        return encodeURIComponent(value);
      });
      const url = request.query ? `${pathname}?${request.query}` : pathname;
      const headers: Record<string, string> = {};
      if (request.credential === 'valid') Object.assign(headers, await credentials.headers(ctx.credential));
      else if (typeof request.credential === 'object' && route.credential) headers[route.credential] = request.credential.value;
      let body: string | FormData | undefined;
      let text: string | null = null;
      if (request.body && 'json' in request.body) {
        text = encodeJson(request.body.json);
        body = text;
        headers['content-type'] = 'application/json';
      } else if (request.body && 'text' in request.body) {
        text = request.body.text;
        body = text;
        headers['content-type'] = request.body.contentType ?? 'application/json';
      } else if (request.body && 'form' in request.body) {
        body = request.body.form;
        if (request.body.boundaryless) headers['content-type'] = 'multipart/form-data';
      }
      const before = await tracker.current();
      const sentAt = Date.now();
      let response: Response;
      try {
        response = await fetch(`${stack.restAdapter.url}${url}`, {
          method: route.method,
          headers,
          ...(body === undefined ? {} : { body }),
        });
      } catch (error) {
        // A request the HTTP client refuses to send (a header it cannot carry) tests nothing.
        stats.skipped.push(`${ctx.name} ${fuzzCase.label}: ${(error as Error).message}`);
        return null;
      }
      const answer = await response.text();
      stats.restRequests += 1;
      const problems: string[] = late ? [late] : [];
      // The harness's contract check: a documented status, the documented headers, content type and body shape.
      try {
        contractChecker().check(route.method, url, response.status, response.headers, answer);
      } catch (error) {
        problems.push((error as Error).message.split('\n').slice(0, 4).join(' | '));
      }
      const contentType = response.headers.get('content-type') ?? '';
      let parsed: unknown = null;
      if (contentType.startsWith('application/json')) {
        try {
          parsed = JSON.parse(answer);
        } catch {
          problems.push('a JSON content type with a body that is not JSON');
        }
      }
      const { code, message } = errorOf(parsed);
      const status = response.status;
      if (status >= 500 && !(status === 500 && code !== undefined && prescribedFiveHundreds(route).has(code)))
        problems.push(`a ${status} the spec does not prescribe`);
      if (code === 'INTERNAL' || code === 'internal' || code === 'INTERNAL_SERVER_ERROR' || code === 'internal_server_error')
        problems.push(`an internal error (${code})`);
      if (message !== undefined && LEAK.test(message)) problems.push(`exception text in the message: ${message.slice(0, 200)}`);
      if (contentType.startsWith('text/html') && /<script/i.test(answer)) problems.push('an HTML answer with a <script>');
      if (status < 400 && breaksSchema(ctx, segments, new URLSearchParams(request.query), text))
        problems.push('accepted input that breaks the published request schema');
      if (prototypePolluted()) problems.push('Object.prototype was polluted');
      const refused = status >= 400;
      if (refused) stats.restRefused += 1;
      else stats.restSucceeded += 1;
      const after = await settle(refused, before, sentAt, problems);
      const newPassword =
        isRecord(request.body) && 'json' in request.body && isRecord(request.body.json) ? request.body.json.newPassword : undefined;
      // A refused hostile credential header says nothing about the test's own credential.
      const replaced = await credentials.after(ctx.credential, ctx.field, {
        succeeded: status < 300,
        unauthenticated: status === 401 && request.credential === 'valid',
        newPassword,
      });
      lastRefusal = refused && after && !replaced ? { label: `${ctx.name} ${fuzzCase.label}`, state: after } : null;
      return problems.length ? `${ctx.name} with ${fuzzCase.label} → ${status}${code ? ` ${code}` : ''}: ${problems.join('; ')}` : null;
    }

    const jsonBody = (value: unknown): RestRequest['body'] => ({ json: value });
    const request = (base: RestBase, change: Partial<RestRequest>): RestRequest => ({
      params: base.params,
      query: new URLSearchParams(base.query).toString(),
      body: base.form ? { form: png() } : base.body === undefined ? null : jsonBody(base.body),
      credential: 'valid',
      ...change,
    });

    /** The deterministic cases of a route: each field, parameter, credential and body shape with its boundary values. */
    function deterministicCases(ctx: RouteContext, example: RestBase): RestCase[] {
      const { route } = ctx;
      const cases: RestCase[] = [{ label: 'its example', build: (base) => request(base, {}) }];
      for (const { seed, counterexample } of seedsOf(ctx.name)) {
        if (counterexample)
          cases.push({
            label: `the counterexample of seed ${seed}: ${preview(counterexample.value)} as ${pathText([...counterexample.path])}`,
            build: (base) => request(base, { body: jsonBody(withValue(base.body, [...counterexample.path], counterexample.value)) }),
          });
      }
      for (let index = 1; index < route.paths.length; index += 1)
        cases.push({ label: `its example at ${route.paths[index]}`, build: (base) => request(base, { pathIndex: index }) });
      if (route.credential) {
        cases.push({ label: 'no credential', build: (base) => request(base, { credential: 'missing' }) });
        for (const c of route.credential === 'x-svc-jwtoken' ? [...CREDENTIAL_CASES, UNSIGNED_JWT] : CREDENTIAL_CASES)
          cases.push({
            label: `${c.label} as the ${route.credential} header`,
            build: (base) => request(base, { credential: { value: String(c.value) } }),
          });
      }
      for (const name of Object.keys(example.params)) {
        for (const c of PATH_CASES)
          cases.push({
            label: `${c.label} as path parameter ${name}`,
            build: (base) => request(base, { params: { ...base.params, [name]: c.value as string | RawSegment } }),
          });
      }
      for (const name of Object.keys(route.queryParameters ?? {})) {
        // Within the HTTP server's 16 KiB request-head limit (beyond it Node answers 431 before any route runs).
        const values = [
          ...STRING_CASES.filter((c) => typeof c.value === 'string' && c.value !== OVERSIZED),
          h('a long value (8000)', 'A'.repeat(8000)),
        ];
        for (const c of values) {
          cases.push({
            label: `${c.label} as query parameter ${name}`,
            build: (base) => request(base, { query: new URLSearchParams({ ...base.query, [name]: c.value as string }).toString() }),
          });
        }
        cases.push({
          label: `no query parameter ${name}`,
          build: (base) => request(base, { query: new URLSearchParams(Object.entries(base.query).filter(([k]) => k !== name)).toString() }),
        });
        cases.push({
          label: `query parameter ${name} twice`,
          build: (base) => request(base, { query: `${new URLSearchParams(base.query).toString()}&${name}=${encodeURIComponent(SCRIPT)}` }),
        });
      }
      if (route.body === 'object' || route.body === 'array') {
        const targets = route.requestSchema ? fieldTargets(route.requestSchema, example.body) : [];
        for (const target of targets) {
          const values = casesOfKind(target.kind, target.enumValues, target.path.length >= 3);
          stats.restCasesPerField.push(values.length + (target.present ? 1 : 0));
          for (const c of values)
            cases.push({
              label: `${c.label} as ${pathText(target.path)}`,
              build: (base) => request(base, { body: jsonBody(withValue(base.body, target.path, c.value)) }),
            });
          if (target.present)
            cases.push({
              label: `no ${pathText(target.path)}`,
              build: (base) => request(base, { body: jsonBody(withValue(base.body, target.path, undefined)) }),
            });
        }
        const objects: Path[] = route.body === 'object' ? [[]] : [[0]];
        for (const target of targets) if (target.kind === 'object' && target.path.length === 1) objects.push(target.path);
        for (const at of objects) {
          for (const c of EXTRA_PROPERTIES) {
            cases.push({
              label: `${c.label} in ${pathText(at)}`,
              build: (base) => {
                const current = valueAt(base.body, at);
                return request(base, {
                  body: jsonBody(withValue(base.body, at, { ...(isRecord(current) ? current : {}), ...(c.value as object) })),
                });
              },
            });
          }
        }
        for (const c of MALFORMED_BODIES) {
          cases.push({
            label: c.label,
            build: (base) => {
              const text = (c.value as string)
                .replace('__WRONG_CONTAINER__', route.body === 'array' ? '{"a":1}' : '[{"a":1}]')
                .replaceAll('__DUP__', Object.keys(isRecord(base.body) ? base.body : {})[0] ?? 'a');
              return request(base, { body: { text } });
            },
          });
        }
        cases.push({
          label: 'its example as text/plain',
          build: (base) => request(base, { body: { text: encodeJson(base.body), contentType: 'text/plain' } }),
        });
        cases.push({
          label: 'a form-encoded body',
          build: (base) => request(base, { body: { text: 'a=1&b=%3Cscript%3E', contentType: 'application/x-www-form-urlencoded' } }),
        });
        // The body limit is one check of the adapter for every JSON route: sent to the first route of each spec.
        if (ROUTES.find((r) => r.api === route.api && (r.body === 'object' || r.body === 'array')) === route) {
          cases.push({
            label: 'a body over the 8 MiB limit',
            build: (base) => request(base, { body: { text: `{"a":"${'x'.repeat(8 * 1024 * 1024)}"}` } }),
          });
        }
      }
      if (route.body === 'multipart') {
        const limit = route.maxFileBytes ?? 1024 * 1024;
        const multipart: Array<[string, () => RestRequest['body']]> = [
          ['no file', () => ({ form: new FormData() })],
          ['the file in another field', () => ({ form: png('logo.png', PNG, 'image/png', 'upload') })],
          ['a text file that says it is a PNG', () => ({ form: png('logo.png', Buffer.from('<script>alert(1)</script>')) })],
          ['a file name with a script tag and RTL marks', () => ({ form: png(`${SCRIPT}\u202Egnp.exe`) })],
          [`a file of ${limit + 1} bytes`, () => ({ form: png('big.png', Buffer.concat([PNG, Buffer.alloc(limit + 1 - PNG.length, 1)])) })],
          ['an empty file', () => ({ form: png('empty.png', Buffer.alloc(0)) })],
          ['multipart without a boundary', () => ({ form: png(), boundaryless: true })],
          [
            'a malformed multipart body',
            () => ({
              text: '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\n\u0000garbage',
              contentType: 'multipart/form-data; boundary=xyz',
            }),
          ],
          ['a JSON body', () => ({ text: '{"file":"iVBORw0KGgo="}' })],
        ];
        for (const [label, make] of multipart) cases.push({ label, build: (base) => request(base, { body: make() }) });
      }
      if (route.body === 'none' && route.method !== 'GET') {
        cases.push({ label: 'an unexpected malformed body', build: (base) => request(base, { body: { text: '{"a":' } }) });
      }
      return cases;
    }

    /** Random cases: one field, parameter or the whole body, with a random hostile value. */
    function randomCase(ctx: RouteContext, example: RestBase): fc.Arbitrary<RestCase> {
      const { route } = ctx;
      const targets = route.requestSchema ? fieldTargets(route.requestSchema, example.body).map((t) => t.path) : [];
      const options: Array<fc.Arbitrary<RestCase>> = [];
      if (targets.length > 0) {
        options.push(
          fc.tuple(fc.constantFrom(...targets), randomValue).map(([at, value]) => ({
            label: `${preview(value)} as ${pathText(at)}`,
            build: (base: RestBase) => request(base, { body: jsonBody(withValue(base.body, at, value)) }),
          })),
        );
      }
      const params = Object.keys(example.params);
      if (params.length > 0) {
        options.push(
          fc.tuple(fc.constantFrom(...params), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 80 })).map(([name, value]) => ({
            label: `${preview(value)} as path parameter ${name}`,
            build: (base: RestBase) => request(base, { params: { ...base.params, [name]: value } }),
          })),
        );
      }
      if (route.body === 'object' || route.body === 'array') {
        options.push(
          fc.oneof(fc.json({ maxDepth: 3 }), fc.string({ unit: 'binary', maxLength: 200 })).map((text) => ({
            label: `the body ${preview(text)}`,
            build: (base: RestBase) => request(base, { body: { text } }),
          })),
        );
      }
      if (Object.keys(route.queryParameters ?? {}).length > 0) {
        options.push(
          fc.string({ unit: 'grapheme', maxLength: 80 }).map((value) => ({
            label: `${preview(value)} as every query parameter`,
            build: (base: RestBase) =>
              request(base, {
                query: new URLSearchParams(
                  Object.fromEntries(Object.keys(route.queryParameters ?? {}).map((name) => [name, value])),
                ).toString(),
              }),
          })),
        );
      }
      if (options.length === 0) {
        options.push(
          fc.string({ unit: 'grapheme', maxLength: 60 }).map((value) => ({
            label: `${preview(value)} as the query string`,
            build: (base: RestBase) => request(base, { query: new URLSearchParams({ fuzz: value }).toString() }),
          })),
        );
      }
      return fc.oneof(...options);
    }

    it('notices a change to any collection but the documented side effects of refusals', async () => {
      const before = await tracker.current();
      const beneficiaries = stack.mongo.db('payments').collection<{ _id: string }>('beneficiaries');
      await beneficiaries.updateOne({ _id: 'demo_beneficiary_3' }, { $set: { fuzzProbe: true } });
      const changed = await tracker.current();
      expect(diffStates(before, changed)).toMatch(/^payments\.beneficiaries \(3 → 3 documents; changed "demo_beneficiary_3"\)$/);
      await beneficiaries.updateOne({ _id: 'demo_beneficiary_3' }, { $unset: { fuzzProbe: '' } });
      const restored = await tracker.current();
      expect(diffStates(before, restored)).toBeNull();
      await stack.mongo.db('user').collection<{ _id: string }>('lockouts').insertOne({ _id: 'fuzz-probe-actor' });
      expect(diffStates(restored, await tracker.current())).toBeNull();
    });

    if (part === 'rest') {
      const routeCases = ROUTES.map((route) => ({ name: `${route.method} ${route.paths[0]}`, route }));

      it.each(routeCases)(
        'answers hostile input to $name with documented refusals that change nothing',
        async ({ route }) => {
          stats.routes += 1;
          const began = Date.now();
          const ctx = routeContext(route);
          const example = await ctx.base();
          const failures: string[] = [];
          for (const fuzzCase of deterministicCases(ctx, example)) {
            const failure = await probeRest(ctx, fuzzCase);
            if (failure) failures.push(failure);
          }
          await randomRuns(ctx.name, randomCase(ctx, example), RANDOM_RUNS_PER_ROUTE, (fuzzCase) => probeRest(ctx, fuzzCase), failures);
          await finishRun(failures, 'restMs', began);
        },
        TEST_TIMEOUT_MS,
      );

      it('answers 404 for a reference-page file named after anything Object.prototype has, or any hostile string', async () => {
        const answers: string[] = [];
        for (const { label, value } of HOSTILE_STRINGS.filter((c) => c.value.length < 4096 && encodable(c.value))) {
          const response = await stack.restFetch(`/docs/${encodeURIComponent(value)}`);
          await response.arrayBuffer();
          if (response.status !== 404) answers.push(`${label} → ${response.status}`);
        }
        expect(answers).toEqual([]);
      });

      it('renders hostile text that other routes stored escaped on the HTML payment page', async () => {
        const merchant = { 'x-svc-jwtoken': credentials.merchant };
        const created = await stack.rest<Envelope<{ svcTransactionId: string }>>('POST', '/public/merchant/payment/create', {
          headers: merchant,
          // The description and a field's label may hold < and > (payerName and values may not).
          body: {
            payerName: 'Pat Payer',
            description: `${SCRIPT_QUOTES}${UNICODE}"><img src=x onerror=alert(1)>`,
            amount: 10,
            currency: 'USD',
            fields: [{ index: 0, code: 'email', label: SCRIPT, value: 'pat@example.com' }],
          },
        });
        expect(created.status, JSON.stringify(created.body)).toBe(200);
        const sent = await stack.rest<Envelope<{ link: string | null }>>('POST', '/public/merchant/payment/send', {
          headers: merchant,
          body: { svcTransactionId: created.body.data.svcTransactionId },
        });
        expect(sent.status, JSON.stringify(sent.body)).toBe(200);
        const page = await stack.restFetch(`/pay?link=${encodeURIComponent(sent.body.data.link ?? '')}`);
        const html = await page.text();
        expect(page.status).toBe(200);
        expect(page.headers.get('content-type')).toMatch(/^text\/html/);
        expect(html).not.toMatch(/<script|<img/i);
        // The text is there, escaped (as an entity of `<`).
        expect(html).toMatch(/(&lt;|&#60;|&#x3c;)script/i);
        await tracker.quiesce();
      });
    }

    // -------------------------------------------------------------------------------------------
    // GraphQL mutations

    /** The mutations of the committed supergraph: the list of tests (the gateway serves this file). */
    const supergraph = buildSchema(readFileSync(SUPERGRAPH_PATH, 'utf8'), { assumeValidSDL: true });
    const mutationNames = Object.keys(supergraph.getMutationType()?.getFields() ?? {}).sort();
    let api: GraphQLSchema;

    /** Known-good values by argument or input field name, for mutations no route gives an example of. */
    const KNOWN: Record<string, unknown> = {
      SvcCardId: 'demo_card_1',
      svcCardId: 'demo_card_1',
      SvcAccountId: 'demo_account_1',
      SvcUserId: DEMO.userId,
      otherSvcUserId: DEMO.friendUserId,
      SvcBeneficiaryId: 'demo_beneficiary_2',
      svcMerchantId: DEMO.merchantId,
      svcAggregatorId: DEMO.aggregatorId,
      svcTransactionId: 'demo_link_1',
      IOUTransactionId: 'fuzz_iou_transaction',
      deliveryId: 'fuzz_delivery',
      currency: 'USD',
      amount: 12.5,
      messageType: '0100',
      actionType: 'request',
      stan: '424242',
      rrn: '424242424242',
      mcc: '5411',
      merchantName: 'Fuzz Mart',
      direction: 'debit',
      kind: 'loan',
      url: 'http://127.0.0.1:9/fuzz-hook',
      webhookUrl: 'http://127.0.0.1:9/fuzz-hook',
      defaultStrategy: 'decline',
      timeoutMs: 500,
      name: 'Fuzz Payee',
      messageId: 'fuzz_message_1',
      eventId: 'fuzz_event_1',
      entryDate: '2026-01-15',
      returnCode: 'R01',
      linkDelivery: 'email',
      narrative: 'fuzz',
    };

    function typeBase(type: GraphQLInputType, name: string, depth: number): unknown {
      if (isNonNullType(type)) return typeBase(type.ofType, name, depth);
      if (Object.hasOwn(KNOWN, name)) return ownValue(KNOWN, name);
      if (isListType(type)) return [typeBase(type.ofType, name, depth + 1)];
      if (isInputObjectType(type)) {
        const fields = Object.values(type.getFields()).filter((f) => isNonNullType(f.type) || Object.hasOwn(KNOWN, f.name));
        return depth > 3 ? {} : Object.fromEntries(fields.map((f) => [f.name, typeBase(f.type, f.name, depth + 1)]));
      }
      if (isEnumType(type)) return type.getValues()[0]?.value;
      switch (type.name) {
        case 'Int':
          return 1;
        case 'Float':
          return 10;
        case 'Boolean':
          return false;
        case 'ID':
          return 'fuzz_id';
        case 'Date':
          return '2026-01-15';
        case 'DateTime':
          return new Date().toISOString();
        case 'JSONObject':
          return { note: 'fuzz' };
        default:
          return 'fuzz';
      }
    }

    /** The route whose operation runs a mutation, for its example. */
    const routeOfField = new Map<string, Route>();
    for (const route of ROUTES) {
      const field = rootFieldOf(route.operation);
      if (!routeOfField.has(field)) routeOfField.set(field, route);
    }
    const fileOf = (name: string): UploadedFile => ({ fieldName: 'file', fileName: name, contentType: 'image/png', data: PNG });

    /** Base variables: the route example's variables where a route runs the mutation, else made from the argument types. */
    async function mutationBase(field: GraphQLField<unknown, unknown>): Promise<Record<string, unknown>> {
      const route = routeOfField.get(field.name);
      if (route) {
        const ctx = routeContext(route);
        const base = await ctx.base();
        try {
          const variables = route.variables({
            params: base.params,
            body: base.body,
            query: new URLSearchParams(base.query),
            files: [fileOf('logo.png')],
          });
          return Object.fromEntries(field.args.map((arg) => [arg.name, variables[arg.name] ?? typeBase(arg.type, arg.name, 0)]));
        } catch {
          // The example does not map (a route-level refusal): fall back to the types.
        }
      }
      return Object.fromEntries(field.args.map((arg) => [arg.name, typeBase(arg.type, arg.name, 0)]));
    }

    interface LeafTarget {
      path: Path;
      type: GraphQLInputType;
    }
    function leafTargets(type: GraphQLInputType, at: Path, depth: number, out: LeafTarget[]): LeafTarget[] {
      out.push({ path: at, type });
      const inner = isNonNullType(type) ? type.ofType : type;
      if (isListType(inner) && depth < 3) leafTargets(inner.ofType, [...at, 0], depth + 1, out);
      if (isInputObjectType(inner) && depth < 3)
        for (const f of Object.values(inner.getFields())) leafTargets(f.type, [...at, f.name], depth + 1, out);
      return out;
    }
    function casesOfType(type: GraphQLInputType, viaRoute: boolean): Hostile[] {
      const nullable = isNonNullType(type) ? type.ofType : type;
      const cases: Hostile[] = [h('null', null)];
      if (isListType(nullable))
        return [
          ...cases,
          h('a single value for a list', 'x'),
          h('a list with a null item', [null]),
          h(
            'a list of 500 items',
            Array.from({ length: 500 }, () => 'x'),
          ),
        ];
      if (isInputObjectType(nullable)) {
        const fields = Object.values(nullable.getFields());
        const required = fields.filter((f) => isNonNullType(f.type));
        return [
          ...cases,
          h('a string for an input object', SCRIPT),
          h('a list for an input object', []),
          h('an unknown member', { unknownFuzzMember: 1 }),
          h('a __proto__ member', { [PROTO_KEY]: { polluted: true } }),
          ...required.map((f) => h(`no ${f.name}`, { __omit: f.name })),
        ];
      }
      if (isEnumType(nullable)) return [...cases, h('an unknown enum value', 'NOT_A_VALUE'), h('a number for an enum', 1)];
      if (!isScalarType(nullable)) return cases;
      switch (nullable.name) {
        case 'Int':
          return [
            ...cases,
            h('a numeric string', '1'),
            h('a fraction', 1.5),
            h('2^31', 2 ** 31),
            h('1e308', 1e308),
            h('-0', new RawJson('-0')),
            h('2^53+1', new RawJson('9007199254740993')),
          ];
        case 'Float':
          return [
            ...cases,
            h('a numeric string', '1.5'),
            h('1e308', 1e308),
            h('-1e308', -1e308),
            h('5e-324', 5e-324),
            h('-0', new RawJson('-0')),
            h('1e400', new RawJson('1e400')),
            h('-1', -1),
          ];
        case 'Boolean':
          return [...cases, h('the string "true"', 'true'), h('1', 1)];
        case 'JSONObject':
          return [
            ...cases,
            h('a list', []),
            h('a string', SCRIPT),
            h('an object nested 150 deep', deeplyNested(150)),
            h('a Mongo $where', { $where: 'sleep(1000)' }),
            h('a member name with a dot', { 'a.b': 1 }),
            h('a __proto__ member', { [PROTO_KEY]: { polluted: true } }),
          ];
        case 'Date':
        case 'DateTime':
          return [
            ...cases,
            h('February 30th', '2026-02-30'),
            h('not a date', 'not a date'),
            h('a number', 1e308),
            h('a script tag', SCRIPT),
            h('an out-of-range date-time', '9999-99-99T99:99:99Z'),
          ];
        default:
          // String, ID and other text scalars; the route of a mutation sends the same values already, so it gets the coercion cases and one of each kind.
          return viaRoute
            ? [
                ...cases,
                h('a number', 12345),
                h('a Mongo operator object', { $gt: '' }),
                h('a hostile string', `${SCRIPT_QUOTES}${UNICODE}${CONTROL}`),
              ]
            : // The REST text cases but for null (above), a list, and the inherited names (every text argument gets those, never thinned out).
              [
                ...cases,
                ...STRING_CASES.filter((c) => c.value !== null && !Array.isArray(c.value) && !PROTOTYPE_NAMES.includes(c.value as string)),
              ];
      }
    }

    /** True for a String, ID or other text scalar (not a number, boolean, date or JSON object). */
    function isTextLeaf(type: GraphQLInputType): boolean {
      const nullable = isNonNullType(type) ? type.ofType : type;
      return isScalarType(nullable) && !['Int', 'Float', 'Boolean', 'JSONObject', 'Date', 'DateTime'].includes(nullable.name);
    }

    /** A value at a path; `{__omit: name}` removes one member of the input object there. */
    function withLeaf(variables: Record<string, unknown>, at: Path, value: unknown): Record<string, unknown> {
      if (isRecord(value) && typeof value.__omit === 'string') {
        const current = valueAt(variables, at);
        const { [value.__omit]: _omitted, ...rest } = isRecord(current) ? current : {};
        return withValue(variables, at, rest) as Record<string, unknown>;
      }
      if (isRecord(value) && PROTO_KEY in value) {
        const current = valueAt(variables, at);
        return withValue(variables, at, { ...(isRecord(current) ? current : {}), ...value }) as Record<string, unknown>;
      }
      return withValue(variables, at, value) as Record<string, unknown>;
    }

    interface GqlRequest {
      /** The request body text. */
      text: string;
      /** The variables it carries. */
      variables: unknown;
    }
    interface GqlCase {
      label: string;
      build: (variables: Record<string, unknown>) => GqlRequest;
    }
    function documentOf(field: GraphQLField<unknown, unknown>, extraArgument = ''): string {
      const definitions = field.args.map((arg: GraphQLArgument) => `$${arg.name}: ${String(arg.type)}`).join(', ');
      const args = [...field.args.map((arg) => `${arg.name}: $${arg.name}`), ...(extraArgument ? [extraArgument] : [])].join(', ');
      const selection = isLeafType(getNamedType(field.type)) ? '' : ' { __typename }';
      return `mutation Fuzz${definitions ? `(${definitions})` : ''} { ${field.name}${args ? `(${args})` : ''}${selection} }`;
    }
    const gqlRequest = (query: string, variables: unknown): GqlRequest => ({
      text: `{"query":${JSON.stringify(query)},"variables":${encodeJson(variables)}}`,
      variables,
    });

    async function probeMutation(
      field: GraphQLField<unknown, unknown>,
      credential: CredentialKind,
      fuzzCase: GqlCase,
    ): Promise<string | null> {
      const late = await changedSinceLastRefusal();
      const request = fuzzCase.build(await mutationBase(field));
      const headers = { 'content-type': 'application/json', ...(await credentials.headers(credential)) };
      const before = await tracker.current();
      const sentAt = Date.now();
      const response = await fetch(`${stack.gateway.url}/graphql`, { method: 'POST', headers, body: request.text });
      const text = await response.text();
      stats.graphqlRequests += 1;
      const problems: string[] = late ? [late] : [];
      let body: { data?: Record<string, unknown> | null; errors?: Array<{ message?: string; extensions?: { code?: string } }> } = {};
      try {
        body = JSON.parse(text) as typeof body;
      } catch {
        problems.push(`an answer that is not JSON: ${text.slice(0, 120)}`);
      }
      if (response.status >= 500) problems.push(`HTTP ${response.status}`);
      for (const error of body.errors ?? []) {
        const code = error.extensions?.code;
        if (code === undefined || code === 'INTERNAL_SERVER_ERROR' || code === 'INTERNAL')
          problems.push(`an internal error (${code ?? 'no code'}): ${(error.message ?? '').slice(0, 200)}`);
        else if (LEAK.test(error.message ?? '')) problems.push(`exception text in the message: ${(error.message ?? '').slice(0, 200)}`);
      }
      if (prototypePolluted()) problems.push('Object.prototype was polluted');
      const refused =
        (body.errors?.length ?? 0) > 0 &&
        (body.data === null || body.data === undefined || body.data[field.name] === null || body.data[field.name] === undefined);
      if (refused) stats.graphqlRefused += 1;
      else stats.graphqlSucceeded += 1;
      const after = await settle(refused, before, sentAt, problems);
      const codes = (body.errors ?? []).map((e) => e.extensions?.code);
      const sent = request.variables;
      const newPassword = isRecord(sent) && isRecord(sent.input) ? sent.input.newPassword : undefined;
      const replaced = await credentials.after(credential, field.name, {
        succeeded: !refused,
        unauthenticated: codes.includes('UNAUTHENTICATED') || codes.includes('ACTOR_LOCKED'),
        newPassword,
      });
      lastRefusal = refused && after && !replaced ? { label: `${field.name} with ${fuzzCase.label}`, state: after } : null;
      return problems.length
        ? `${field.name} with ${fuzzCase.label} → HTTP ${response.status} ${codes.join(',')}: ${problems.join('; ')}`
        : null;
    }

    /** Evenly thinned: at most `max` of the list, first and last kept. */
    const thin = <T>(list: T[], max: number): T[] =>
      list.length <= max ? list : Array.from({ length: max }, (_, i) => list[Math.round((i * (list.length - 1)) / (max - 1))]!);

    if (part === 'graphql') {
      describe('GraphQL mutations', () => {
        beforeAll(async () => {
          const introspection = await stack.graphql<IntrospectionQuery>(getIntrospectionQuery());
          if (!introspection.body.data) throw new Error(`introspection failed: ${JSON.stringify(introspection.body.errors)}`);
          api = buildClientSchema(introspection.body.data);
        });

        it('serves exactly the mutations of the committed supergraph, each fuzzed below', () => {
          expect(Object.keys(api.getMutationType()?.getFields() ?? {}).sort()).toEqual(mutationNames);
        });

        it.each(mutationNames)(
          'refuses hostile variables of %s without an internal error, changing nothing when it refuses',
          async (name) => {
            stats.mutations += 1;
            const began = Date.now();
            const field = api.getMutationType()?.getFields()[name];
            if (!field) throw new Error(`the gateway serves no mutation ${name}`);
            // A mutation added since this table was written is fuzzed as an end user (its refusals are still judged).
            const credential = ownValue(CREDENTIAL_OF_FIELD, name) ?? 'user';
            const query = documentOf(field);
            const targets = field.args.flatMap((arg) => leafTargets(arg.type, [arg.name], 0, []));
            const cases: GqlCase[] = [
              { label: 'its base variables', build: (variables) => gqlRequest(query, variables) },
              { label: 'an unknown argument', build: (variables) => gqlRequest(documentOf(field, 'unknownFuzzArgument: 1'), variables) },
              {
                label: 'variables that are a string',
                build: () => ({ text: `{"query":${JSON.stringify(query)},"variables":"<script>"}`, variables: '<script>' }),
              },
              { label: 'an undeclared variable', build: (variables) => gqlRequest(query, { ...variables, undeclaredFuzz: SCRIPT }) },
              { label: 'a truncated document', build: (variables) => gqlRequest(query.slice(0, Math.floor(query.length / 2)), variables) },
            ];
            const leafCases: GqlCase[] = [];
            for (const target of targets) {
              const values = casesOfType(target.type, routeOfField.has(name));
              stats.graphqlCasesPerLeaf.push(values.length);
              for (const c of values)
                leafCases.push({
                  label: `${c.label} as ${pathText(target.path)}`,
                  build: (variables) => gqlRequest(query, withLeaf(variables, target.path, c.value)),
                });
            }
            cases.push(...thin(leafCases, MAX_DETERMINISTIC_PER_MUTATION));
            for (const { seed, counterexample } of seedsOf(name)) {
              if (counterexample)
                cases.push({
                  label: `the counterexample of seed ${seed}: ${preview(counterexample.value)} as ${pathText([...counterexample.path])}`,
                  build: (variables) => gqlRequest(query, withLeaf(variables, [...counterexample.path], counterexample.value)),
                });
            }
            // Every text argument gets every inherited name, never thinned out.
            for (const target of targets.filter((t) => isTextLeaf(t.type))) {
              for (const name of PROTOTYPE_NAMES)
                cases.push({
                  label: `the inherited name ${name} as ${pathText(target.path)}`,
                  build: (variables) => gqlRequest(query, withLeaf(variables, target.path, name)),
                });
            }
            const failures: string[] = [];
            for (const fuzzCase of cases) {
              const failure = await probeMutation(field, credential, fuzzCase);
              if (failure) failures.push(failure);
            }
            if (targets.length > 0) {
              await randomRuns(
                name,
                fc.tuple(fc.constantFrom(...targets), randomValue),
                RANDOM_RUNS_PER_MUTATION,
                ([target, value]) =>
                  probeMutation(field, credential, {
                    label: `${preview(value)} as ${pathText(target.path)}`,
                    build: (variables) => gqlRequest(query, withLeaf(variables, target.path, value)),
                  }),
                failures,
              );
            }
            await finishRun(failures, 'graphqlMs', began);
          },
          TEST_TIMEOUT_MS,
        );
      });
    }

    it('saw every change to the databases (a full re-read matches the tracked state)', async () => {
      const tracked = await tracker.current();
      const full = await tracker.full();
      expect(diffStates(tracked, full)).toBeNull();
    });
  });
}
