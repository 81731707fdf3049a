import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, REPO_ROOT } from '../../platform/runtime/config.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { signPrincipal, verifyPrincipal } from '../../platform/security/signed-headers.js';
import { type Principal } from '../../platform/contracts/principal.js';
import { isIsoDate, isIsoDateTime } from '../../platform/contracts/dates.js';
import { RoutingNumber, SvcId } from '../../platform/graphql/scalars.js';
import { hashPassword, newOpaqueToken, verifyPassword } from '../../platform/security/secrets.js';
import { withoutCredentials } from '../../platform/security/masking.js';
import { formatError } from '../../platform/graphql/error-format.js';
import { isConnectionDropped, isDatabaseUnavailable } from '../../platform/mongo/outage.js';
import { withRecurringTask } from '../../platform/messaging/sweep.js';
import { MongoNetworkError, MongoServerError } from 'mongodb';
import type { HttpService } from '../../platform/http/server.js';
import { nodeFlagsOf, SERVICE_NODE_FLAGS } from '../../scripts/node-flags.js';

const SECRET = 's'.repeat(40);
const user: Principal = { kind: 'user', userId: 'u1', sessionId: 'ses_1', channel: 'internet' };

describe('the signed internal principal', () => {
  it('verifies what it signed', () => {
    expect(verifyPrincipal(signPrincipal(user, SECRET), SECRET)).toEqual(user);
  });

  it('refuses a changed payload, another key, a past expiry and garbage', () => {
    const header = signPrincipal(user, SECRET);
    const [version, payload, mac] = header.split('.');
    const forged = Buffer.from(Buffer.from(payload!, 'base64url').toString().replace('u1', 'u2')).toString('base64url');
    expect(verifyPrincipal(`${version}.${forged}.${mac}`, SECRET)).toBeNull();
    expect(verifyPrincipal(header, 't'.repeat(40))).toBeNull();
    expect(verifyPrincipal(signPrincipal(user, SECRET, Date.now() - 61_000), SECRET)).toBeNull();
    expect(verifyPrincipal('v1.x', SECRET)).toBeNull();
    expect(verifyPrincipal(undefined, SECRET)).toBeNull();
  });
});

describe('configuration', () => {
  it('reports every problem at once, naming the variable', () => {
    try {
      loadConfig({ NODE_ENV: 'production', GATEWAY_PORT: 'abc', LOG_LEVEL: 'loud' });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const { problems } = error as ConfigError;
      expect(problems.some((p) => p.startsWith('GATEWAY_PORT'))).toBe(true);
      expect(problems.some((p) => p.startsWith('LOG_LEVEL'))).toBe(true);
      expect(problems.some((p) => p.startsWith('INTERNAL_SECRET'))).toBe(true);
    }
  });

  it("refuses in production a service key named after one of the services' own, which would act as it", () => {
    const key = 'k'.repeat(40);
    expect(() => loadConfig({ NODE_ENV: 'production', INTERNAL_SECRET: SECRET, SERVICE_KEYS: `payments=${key}` })).toThrow(
      /SERVICE_KEYS must not name a key payments/,
    );
    expect(loadConfig({ NODE_ENV: 'production', INTERNAL_SECRET: SECRET, SERVICE_KEYS: `operator=${key}` }).serviceKeyHashes.size).toBe(1);
    expect(loadConfig({ NODE_ENV: 'test', SERVICE_KEYS: `payments=${key}` }).serviceKeyHashes.size).toBe(1);
  });

  it('gives a service key least privilege unless SERVICE_KEY_SCOPES says more, and refuses a bad scope naming the variable', () => {
    const key = (c: string) => c.repeat(40);
    const keys = `statements=${key('s')},operator=${key('o')},chat=${key('c')}`;
    const config = loadConfig({
      NODE_ENV: 'production',
      INTERNAL_SECRET: SECRET,
      SERVICE_KEYS: keys,
      SERVICE_KEY_SCOPES: JSON.stringify({ chat: { channels: ['chat'], users: '*' } }),
    });
    // No scope: nothing, or the fields reserved for the key's name.
    expect(config.serviceKeyScopes.get('statements')).toEqual({ channels: [], users: [], fields: [] });
    expect(config.serviceKeyScopes.get('operator')).toMatchObject({
      channels: [],
      users: [],
      fields: expect.arrayContaining(['setUserActive', 'auditLog']) as unknown,
    });
    expect(config.serviceKeyScopes.get('chat')).toEqual({ channels: ['chat'], users: '*', fields: [] });
    // Outside production a key named after our own services acts as it (null: no scope).
    expect(loadConfig({ NODE_ENV: 'test', SERVICE_KEYS: `payments=${key('p')}` }).serviceKeyScopes.get('payments')).toBeNull();
    const refused = (scopes: unknown) => {
      try {
        loadConfig({
          NODE_ENV: 'production',
          INTERNAL_SECRET: SECRET,
          SERVICE_KEYS: keys,
          SERVICE_KEY_SCOPES: typeof scopes === 'string' ? scopes : JSON.stringify(scopes),
        });
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as ConfigError).problems;
      }
      return [];
    };
    expect(refused('statements: everything')).toEqual([expect.stringMatching(/^SERVICE_KEY_SCOPES must be a JSON object/) as unknown]);
    expect(refused({ statements: { channels: ['internet'] } })).toEqual([
      expect.stringMatching(/^SERVICE_KEY_SCOPES\.statements\.channels must list service login channels/) as unknown,
    ]);
    // "*" is written out as itself, not inside a list.
    expect(refused({ statements: { channels: ['statementGenerator'], users: ['*'] } })).toEqual([
      expect.stringMatching(/^SERVICE_KEY_SCOPES\.statements\.users must be "\*"/) as unknown,
    ]);
    // The scope travels in a signed header: 100 users at most.
    expect(refused({ statements: { users: Array.from({ length: 100 }, (_, i) => `user_${i}`) } })).toEqual([]);
    expect(refused({ statements: { users: Array.from({ length: 101 }, (_, i) => `user_${i}`) } })).toEqual([
      expect.stringMatching(
        /^SERVICE_KEY_SCOPES\.statements\.users must be "\*" \(every user\) or a list of at most 100 SvcUserIds/,
      ) as unknown,
    ]);
    expect(refused({ statements: { users: 'all' } })).toEqual([expect.stringMatching(/^SERVICE_KEY_SCOPES\.statements\.users/) as unknown]);
    expect(refused({ statements: { fields: ['node', 'not a field'] } })).toEqual([
      expect.stringMatching(/^SERVICE_KEY_SCOPES\.statements\.fields/) as unknown,
    ]);
    expect(refused({ statements: { channel: ['chat'] } })).toEqual([
      expect.stringMatching(/^SERVICE_KEY_SCOPES\.statements has unknown members \(channel\)/) as unknown,
    ]);
    expect(refused({ reporting: { fields: ['node'] } })).toEqual(['SERVICE_KEY_SCOPES names reporting, which SERVICE_KEYS does not name']);
    expect(refused({ constructor: {} })).toEqual(['SERVICE_KEY_SCOPES names constructor, which SERVICE_KEYS does not name']);
  });

  it('turns the test channel off by default in production only', () => {
    expect(loadConfig({ NODE_ENV: 'development' }).testChannelEnabled).toBe(true);
    expect(loadConfig({ NODE_ENV: 'production', INTERNAL_SECRET: SECRET }).testChannelEnabled).toBe(false);
    expect(loadConfig({ NODE_ENV: 'production', INTERNAL_SECRET: SECRET, TEST_CHANNEL_ENABLED: 'true' }).testChannelEnabled).toBe(true);
  });
});

describe('the logger', () => {
  it('redacts secrets wherever they sit in a line', () => {
    const lines: string[] = [];
    const logger = createLogger('debug', { service: 't' }, (line) => lines.push(line));
    logger.info('x', { body: { password: 'hunter2', nested: [{ token: 'abc' }] }, headers: { 'x-svc-token': 'zzz' } });
    expect(lines[0]).not.toMatch(/hunter2|abc|zzz/);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'info', service: 't', msg: 'x', body: { password: '[redacted]' } });
  });

  it("cuts an opaque token out of an unexpected error's message and stack", () => {
    const lines: string[] = [];
    const token = newOpaqueToken();
    createLogger('error', {}, (line) => lines.push(line)).error('unexpected error', {
      error: new TypeError(`Cannot convert object to primitive value: {"token":"${token}","prospectId":"prs_1"}`),
    });
    expect(lines[0]).not.toContain(token);
    expect(lines[0]).toContain('prs_1');
  });

  it('writes nothing below its level', () => {
    const lines: string[] = [];
    createLogger('warn', {}, (line) => lines.push(line)).info('hidden');
    expect(lines).toEqual([]);
  });
});

describe('connection strings fit to print', () => {
  it('leave out the user, the password and secret parameters, and keep the hosts and the rest', () => {
    expect(withoutCredentials('mongodb://127.0.0.1:27017/')).toBe('mongodb://127.0.0.1:27017/');
    expect(withoutCredentials('mongodb://bank:s3cret@mongo-0.mongo,mongo-1.mongo:27017/?replicaSet=rs0&authSource=admin')).toBe(
      'mongodb://mongo-0.mongo,mongo-1.mongo:27017/?replicaSet=rs0&authSource=admin',
    );
    expect(withoutCredentials('mongodb+srv://bank:s3cret@cluster0.example.net/bank')).toBe('mongodb+srv://cluster0.example.net/bank');
    expect(withoutCredentials('redis://:s3cret@redis-master:6379')).toBe('redis://redis-master:6379');
    expect(
      withoutCredentials('mongodb://h/?tls=true&tlsCertificateKeyFilePassword=s3cret&authMechanismProperties=AWS_SESSION_TOKEN:s3cret'),
    ).toBe('mongodb://h/?tls=true&tlsCertificateKeyFilePassword=[redacted]&authMechanismProperties=[redacted]');
  });

  it('leave out a password written with the characters that end a user part unescaped', () => {
    for (const uri of ['mongodb://bank:s3/cret@h:27017/', 'mongodb://bank:s3?cret@h:27017/', 'mongodb://bank:s3@cret@h:27017/'])
      expect(withoutCredentials(uri)).toBe('mongodb://h:27017/');
  });
});

describe('validation scalars', () => {
  it('accept the documented patterns and refuse others with a message', () => {
    expect(SvcId.parseValue('abc_123')).toBe('abc_123');
    expect(() => SvcId.parseValue('a'.repeat(37))).toThrow(/1-36/);
    expect(() => SvcId.parseValue('a-b')).toThrow(/SvcId/);
    expect(RoutingNumber.parseValue('021000021')).toBe('021000021');
    expect(() => RoutingNumber.parseValue('12345678')).toThrow(/exactly 9/);
  });

  it('tell real dates and ISO 8601 date-times from look-alikes', () => {
    expect(isIsoDate('2024-02-29')).toBe(true);
    expect(isIsoDate('2023-02-29')).toBe(false);
    expect(isIsoDateTime('2026-11-22T10:15:00Z')).toBe(true);
    expect(isIsoDateTime('2026-11-22T10:15:00.123+01:00')).toBe(true);
    expect(isIsoDateTime('2026-11-22 10:15')).toBe(false);
    expect(isIsoDateTime('2026-11-22T25:00:00Z')).toBe(false);
  });
});

describe('password hashing', () => {
  it('verifies the right password only, with a salt per hash', async () => {
    const hash = await hashPassword('Demo#Pass2026');
    expect(hash).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(await hashPassword('Demo#Pass2026')).not.toBe(hash);
    expect(await verifyPassword('Demo#Pass2026', hash)).toBe(true);
    expect(await verifyPassword('demo#pass2026', hash)).toBe(false);
  });
});

describe('recurring tasks', () => {
  it('skips a tick while the previous run is still going, and stops when the service closes', async () => {
    let running = 0;
    let most = 0;
    let runs = 0;
    const service = { close: async () => {} } as unknown as HttpService;
    const withTask = withRecurringTask(
      service,
      20,
      async () => {
        running += 1;
        runs += 1;
        most = Math.max(most, running);
        await new Promise((resolve) => setTimeout(resolve, 120));
        running -= 1;
      },
      createLogger('silent'),
    );
    await new Promise((resolve) => setTimeout(resolve, 400));
    await withTask.close();
    // Closing waits for the run in flight, so the database is not closed under it.
    expect(running).toBe(0);
    const afterClose = runs;
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(most).toBe(1);
    expect(runs).toBeGreaterThanOrEqual(2);
    expect(runs).toBeLessThanOrEqual(4);
    expect(runs).toBe(afterClose);
  });

  it('logs a run that fails, without an unhandled rejection, and runs again on the next tick', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger('warn', {}, (line) => lines.push(JSON.parse(line) as Record<string, unknown>));
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    let runs = 0;
    const service = { close: async () => {} } as unknown as HttpService;
    const withTask = withRecurringTask(
      service,
      20,
      async () => {
        runs += 1;
        throw new Error('the database is away');
      },
      logger,
    );
    try {
      await new Promise((resolve) => setTimeout(resolve, 150));
    } finally {
      await withTask.close();
      process.off('unhandledRejection', onUnhandled);
    }
    expect(runs).toBeGreaterThanOrEqual(2);
    expect(unhandled).toEqual([]);
    expect(lines.filter((line) => line.msg === 'recurring task failed' && line.error === 'the database is away').length).toBe(runs);
  });
});

describe('database availability', () => {
  it('answers a dropped connection and an unreachable database as UNAVAILABLE, and a refused command as neither', async () => {
    // What the driver throws when it writes on a pooled connection the stopped server had closed.
    const server = createServer((peer) => peer.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const dropped = await new Promise<Error>((resolve) => {
      const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
      socket.on('error', () => {});
      socket.once('end', () => setImmediate(() => socket.write('x', (error) => resolve(error!))));
    });
    await new Promise<void>((resolve) => server.close(() => resolve()));
    expect((dropped as NodeJS.ErrnoException).code).toBe('EPIPE');
    expect(isConnectionDropped(dropped)).toBe(true);
    expect(isDatabaseUnavailable(new MongoNetworkError('connection reset'))).toBe(true);
    const refused = new MongoServerError({ message: 'duplicate key', code: 11000 });
    expect(isDatabaseUnavailable(refused) || isConnectionDropped(refused)).toBe(false);
    expect(isConnectionDropped(new Error('something else'))).toBe(false);
    const format = formatError(loadConfig({ NODE_ENV: 'test' }), createLogger('silent'));
    expect(format({ message: 'This socket has been ended by the other party', path: ['createPaymentLink'] }, dropped)).toMatchObject({
      path: ['createPaymentLink'],
      extensions: { code: 'UNAVAILABLE' },
    });
  });

  it('answers an unexpected error generically in every mode, with its own message only when EXPOSE_ERROR_DETAILS is on', () => {
    const unexpected = {
      message: 'Cannot read properties of undefined (reading "token") {"token":"secret-value"}',
      path: ['submitProspectData'],
      extensions: { code: 'INTERNAL_SERVER_ERROR' },
    };
    for (const NODE_ENV of ['development', 'test', 'production']) {
      const format = formatError(loadConfig({ NODE_ENV, INTERNAL_SECRET: SECRET }), createLogger('silent'));
      expect(format(unexpected, new TypeError(unexpected.message)), NODE_ENV).toEqual({
        message: 'Internal server error',
        path: ['submitProspectData'],
        extensions: { code: 'INTERNAL' },
      });
    }
    const exposing = formatError(loadConfig({ NODE_ENV: 'development', EXPOSE_ERROR_DETAILS: 'true' }), createLogger('silent'));
    expect(exposing(unexpected, new TypeError(unexpected.message)).message).toBe(unexpected.message);
    expect(loadConfig({ NODE_ENV: 'development' }).exposeErrorDetails).toBe(false);
    expect(() => loadConfig({ NODE_ENV: 'production', INTERNAL_SECRET: SECRET, EXPOSE_ERROR_DETAILS: 'true' })).toThrow(
      /EXPOSE_ERROR_DETAILS/,
    );
    // A known code keeps its message.
    const known = { message: 'preSegment valueOf leads to no segment.', extensions: { code: 'VALIDATION_FAILED' } };
    expect(
      formatError(loadConfig({ NODE_ENV: 'production', INTERNAL_SECRET: SECRET }), createLogger('silent'))(known, new Error(known.message)),
    ).toEqual(known);
  });
});

describe("the services' Node.js flags", () => {
  it('are the ones npm start, npm run start:service and the Docker image run the services with', () => {
    const root = REPO_ROOT;
    const scripts = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
    const flags = SERVICE_NODE_FLAGS.join(' ');
    expect(scripts.start).toBe(`tsx ${flags} scripts/start.ts`);
    expect(scripts['start:service']).toBe(`tsx ${flags} scripts/serve.ts`);
    expect(dockerfile).toContain(
      'exec node --enable-source-maps $(node scripts/node-flags.js \\"$SERVICE\\") scripts/serve.js \\"$SERVICE\\"',
    );
    expect(dockerfile).not.toContain('NODE_OPTIONS=');
    expect(nodeFlagsOf('cards')).toEqual(SERVICE_NODE_FLAGS);
    expect(nodeFlagsOf('gateway')).toEqual([]);
    expect(nodeFlagsOf('rest-adapter')).toEqual([]);
  });

  it("are printed per service by scripts/node-flags, for the image's command", () => {
    const root = REPO_ROOT;
    const run = (service: string) =>
      execFileSync(process.execPath, ['--import', 'tsx', path.join(root, 'scripts', 'node-flags.ts'), service], {
        encoding: 'utf8',
      }).trim();
    expect(run('payments')).toBe(SERVICE_NODE_FLAGS.join(' '));
    expect(run('gateway')).toBe('');
  });
});
