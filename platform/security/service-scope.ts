import { SERVICE_CHANNELS, type Principal, type ServiceChannel, type ServiceScope } from '../contracts/principal.js';
import { isOneOf, ownValue } from '../contracts/own.js';

/**
 * The root fields a key may call when SERVICE_KEY_SCOPES says nothing about it: those whose
 * resolvers are reserved for the key's name. Any other name gets nothing.
 */
const FIELDS_OF_NAMED_SERVICES: Readonly<Record<string, readonly string[]>> = {
  operator: [
    'setUserActive',
    'auditLog',
    'restrictionRules',
    'evaluateTransaction',
    'setRestriction',
    'removeRestriction',
    'placeProceduralRestriction',
    'liftProceduralRestriction',
  ],
  'card-processor': ['authorizeCardMessage'],
  'ach-processor': ['recordAchDebit', 'recordAchReturn', 'recordAchSettlement'],
};

/** A key's scope when SERVICE_KEY_SCOPES does not name it: no channel, no user, the fields reserved for its name. */
export function defaultServiceScope(name: string): ServiceScope {
  return { channels: [], users: [], fields: ownValue(FIELDS_OF_NAMED_SERVICES, name) ?? [] };
}

/**
 * Users one scope may list by id: the scope travels in the signed principal header of every call
 * the key makes, which must stay well under Node's 16 KiB of headers. Past that, `'*'`.
 */
const MAX_SCOPE_USERS = 100;
const SVC_USER_ID = /^[A-Za-z0-9_]{1,36}$/;
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,99}$/;
const SCOPE_MEMBERS = ['channels', 'users', 'fields'];

/** A problem of SERVICE_KEY_SCOPES: where in its JSON (`[keyName, member]`, empty for the whole), and what is wrong. */
interface ScopeProblem {
  path: string[];
  message: string;
}

const NOT_AN_OBJECT: ScopeProblem = {
  path: [],
  message: 'must be a JSON object from key names to {"channels": [...], "users": [...] or "*", "fields": [...]}',
};

/**
 * Reads SERVICE_KEY_SCOPES: a JSON object from key names to `{channels, users, fields}`, every
 * member optional (absent is none). Returns the scopes by name, or the problems found, each with
 * the key name and member it concerns.
 */
export function parseServiceKeyScopes(raw: string): { scopes: Map<string, ServiceScope>; problems: ScopeProblem[] } {
  const scopes = new Map<string, ServiceScope>();
  const problems: ScopeProblem[] = [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { scopes, problems: [NOT_AN_OBJECT] };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return { scopes, problems: [NOT_AN_OBJECT] };
  for (const [name, value] of Object.entries(parsed as Record<string, unknown>)) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      problems.push({ path: [name], message: 'must be an object with channels, users and fields' });
      continue;
    }
    const entry = value as Record<string, unknown>;
    const unknown = Object.keys(entry).filter((member) => !SCOPE_MEMBERS.includes(member));
    if (unknown.length)
      problems.push({ path: [name], message: `has unknown members (${unknown.join(', ')}); a scope has channels, users and fields` });
    const list = (member: string): unknown[] | null => {
      const given = Object.hasOwn(entry, member) ? entry[member] : [];
      if (!Array.isArray(given)) return null;
      return given as unknown[];
    };
    const channels = list('channels');
    if (channels === null || !channels.every((c) => isOneOf(SERVICE_CHANNELS, c))) {
      problems.push({ path: [name, 'channels'], message: `must list service login channels (${SERVICE_CHANNELS.join(', ')})` });
    }
    let users: readonly string[] | '*' = [];
    if (Object.hasOwn(entry, 'users') && entry.users === '*') users = '*';
    else {
      const given = list('users');
      if (given === null || given.length > MAX_SCOPE_USERS || !given.every((u) => typeof u === 'string' && SVC_USER_ID.test(u))) {
        problems.push({
          path: [name, 'users'],
          message: `must be "*" (every user) or a list of at most ${MAX_SCOPE_USERS} SvcUserIds (letters, digits, underscores)`,
        });
      } else users = given as string[];
    }
    const fields = list('fields');
    if (fields === null || !fields.every((f) => typeof f === 'string' && FIELD_NAME.test(f))) {
      problems.push({ path: [name, 'fields'], message: 'must list root field names of the graph' });
    }
    scopes.set(name, { channels: (channels ?? []) as ServiceChannel[], users, fields: (fields ?? []) as string[] });
  }
  return { scopes, problems };
}

/**
 * True for the platform's own services (a subgraph calling the graph, the gateway calling a
 * subgraph's internal route): service principals that did not come from a service key.
 */
export function isInternalService(principal: Principal): boolean {
  return principal.kind === 'service' && principal.scope === undefined;
}

/** The scope of a principal that came from a service key; undefined for anyone else. */
export function keyScopeOf(principal: Principal): ServiceScope | undefined {
  return principal.kind === 'service' ? principal.scope : undefined;
}

/**
 * Whether a key's scope lets it call a root field: the fields it lists, and `login`, which the
 * user subgraph holds to the scope's channels and users (refusing with the login's own
 * CHANNEL_NOT_PERMITTED).
 */
export function scopeAllowsField(scope: ServiceScope, field: string): boolean {
  return field === 'login' || scope.fields.includes(field);
}

/** Whether a key's scope lets it log in over a channel: only the service channels it lists. */
export function scopeAllowsChannel(scope: ServiceScope, channel: string): boolean {
  return (scope.channels as readonly string[]).includes(channel);
}

/** Whether a key's scope lets it open a session for this user. */
export function scopeAllowsUser(scope: ServiceScope, SvcUserId: string): boolean {
  return scope.users === '*' || scope.users.includes(SvcUserId);
}
