import { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { comparePositions, InProcessBus, RedisBus, type BusEvent, type LoggedEvent } from '../../platform/messaging/event-bus.js';
import { createLogger } from '../../platform/runtime/logger.js';

const REDIS_URL = 'redis://127.0.0.1:6379';

const event = (id: string): BusEvent => ({
  id,
  type: 'card.status',
  audience: { SvcUserId: 'u1' },
  payload: { SvcCardId: 'c1', status: 'active', isActive: true },
  dtsCreated: new Date().toISOString(),
});

describe('the in-process event log', () => {
  it('gives each event a position after the one before, and keeps what the retention allows', async () => {
    const bus = new InProcessBus({ seconds: 3600, events: 3 });
    const seen: LoggedEvent[] = [];
    bus.subscribe((logged) => seen.push(logged));
    for (const id of ['e1', 'e2', 'e3', 'e4', 'e5']) await bus.publish(event(id));
    expect(seen.map((logged) => logged.id)).toEqual(['e1', 'e2', 'e3', 'e4', 'e5']);
    for (let i = 1; i < seen.length; i += 1) expect(comparePositions(seen[i]!.position, seen[i - 1]!.position)).toBeGreaterThan(0);
    expect(bus.held().map((logged) => logged.id)).toEqual(['e3', 'e4', 'e5']);
    await bus.close();
  });

  it('lets events older than the retention go', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      const bus = new InProcessBus({ seconds: 60, events: 100 });
      await bus.publish(event('old'));
      vi.setSystemTime(Date.now() + 61_000);
      await bus.publish(event('new'));
      expect(bus.held().map((logged) => logged.id)).toEqual(['new']);
      await bus.close();
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('the event log on Redis Streams', () => {
  const open: Array<{ close(): Promise<void> } | Redis> = [];
  afterEach(async () => {
    for (const item of open.splice(0)) {
      if (item instanceof Redis) item.disconnect();
      else await item.close();
    }
  });

  /** Two buses on a stream of their own (other suites share the Redis), and an admin connection. */
  const setUp = async () => {
    const stream = `test-event-log-${process.pid}-${Date.now()}-${Math.random()}`;
    const logger = createLogger('silent');
    const writer = new RedisBus(REDIS_URL, logger, stream);
    const reader = new RedisBus(REDIS_URL, logger, stream);
    const admin = new Redis(REDIS_URL);
    open.push(writer, reader, admin);
    const seen: LoggedEvent[] = [];
    reader.subscribe((logged) => seen.push(logged));
    await reader.listening();
    /** Cuts the reader's connection, as a network blip or a Redis failover would. */
    const cutReader = async () => {
      const clients = (await admin.client('LIST')) as string;
      const id = /id=(\d+) /.exec(clients.split('\n').find((line) => line.includes(`name=${stream}:reader `)) ?? '')?.[1];
      expect(id).toBeDefined();
      await admin.client('KILL', 'ID', id!);
      // Held as behind from when the reader notices, until it has caught up.
      await vi.waitFor(() => expect(reader.continuity()).toBeNull(), { interval: 2 });
    };
    return { stream, writer, reader, admin, seen, cutReader };
  };

  it('keeps what the retention allows, by length and by age', async () => {
    const logger = createLogger('silent');
    const admin = new Redis(REDIS_URL);
    open.push(admin);
    const byLength = `test-event-log-length-${process.pid}-${Date.now()}`;
    const short = new RedisBus(REDIS_URL, logger, byLength, { seconds: 3600, events: 100 });
    open.push(short);
    for (let i = 0; i < 1000; i += 1) await short.publish(event(`l${i}`));
    // Trimmed a node of entries at a time (MAXLEN ~): never below the retention, far below what was appended.
    const kept = await admin.xlen(byLength);
    expect(kept).toBeGreaterThanOrEqual(100);
    expect(kept).toBeLessThan(300);
    const byAge = `test-event-log-age-${process.pid}-${Date.now()}`;
    const brief = new RedisBus(REDIS_URL, logger, byAge, { seconds: 1, events: 100_000 });
    open.push(brief);
    for (let i = 0; i < 300; i += 1) await brief.publish(event(`a${i}`));
    await new Promise((resolve) => setTimeout(resolve, 600));
    await brief.publish(event('mid'));
    await new Promise((resolve) => setTimeout(resolve, 600));
    await brief.publish(event('fresh'));
    expect(await admin.xlen(byAge)).toBeLessThan(300);
    // A log no longer written goes once the retention passes without an event.
    const expiresIn = await admin.pttl(byAge);
    expect(expiresIn).toBeGreaterThan(0);
    expect(expiresIn).toBeLessThanOrEqual(1000);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(await admin.exists(byAge, `${byAge}:ordinal`)).toBe(0);
    await admin.del(byLength, `${byLength}:ordinal`);
  });

  it('hands every event to every reader in order, with its stream position', async () => {
    const { writer, reader, seen } = await setUp();
    for (const id of ['a', 'b', 'c']) await writer.publish(event(id));
    await vi.waitFor(() => expect(seen.map((logged) => logged.id)).toEqual(['a', 'b', 'c']));
    expect(seen.map((logged) => logged.position)).toEqual([...seen.map((logged) => logged.position)].sort(comparePositions));
    expect(reader.continuity()).not.toBeNull();
  });

  it('loses nothing across a reconnection, and keeps its continuity number', async () => {
    const { writer, reader, seen, cutReader } = await setUp();
    await writer.publish(event('before'));
    await vi.waitFor(() => expect(seen).toHaveLength(1));
    const held = reader.continuity();
    expect(held).not.toBeNull();
    await cutReader();
    // Published while the reader is away: a pub/sub subscriber would never see these.
    for (const id of ['away-1', 'away-2', 'away-3']) await writer.publish(event(id));
    await vi.waitFor(() => expect(seen.map((logged) => logged.id)).toEqual(['before', 'away-1', 'away-2', 'away-3']));
    await vi.waitFor(() => expect(reader.continuity()).toBe(held));
  });

  it('moves its continuity number on when events it had not read were trimmed away, and reads on after them', async () => {
    const { stream, writer, reader, admin, seen, cutReader } = await setUp();
    const held = reader.continuity();
    expect(held).not.toBeNull();
    await cutReader();
    // Appended and trimmed before the reader is back: it can never read them.
    await writer.publish(event('gone-1'));
    await writer.publish(event('gone-2'));
    await admin.xtrim(stream, 'MAXLEN', 0);
    await vi.waitFor(() => expect(reader.continuity()).toBe(held! + 1), { timeout: 10_000 });
    expect(seen).toEqual([]);
    await writer.publish(event('after'));
    await vi.waitFor(() => expect(seen.map((logged) => logged.id)).toEqual(['after']));
    expect(reader.continuity()).toBe(held! + 1);
  });
});

describe.each([
  { name: 'in the process', open: (retention: { seconds: number; events: number }) => new InProcessBus(retention) },
  {
    name: 'on Redis Streams',
    open: (retention: { seconds: number; events: number }) =>
      new RedisBus(REDIS_URL, createLogger('silent'), `test-event-log-read-${process.pid}-${Date.now()}-${Math.random()}`, retention),
  },
])('reading the log from a position, $name', ({ open: openBus }) => {
  it('reads what followed a position it holds, in order, up to a bound and a count', async () => {
    const bus = openBus({ seconds: 3600, events: 1000 });
    const seen: LoggedEvent[] = [];
    bus.subscribe((logged) => seen.push(logged));
    await bus.ready();
    for (const id of ['r1', 'r2', 'r3', 'r4', 'r5']) await bus.publish(event(id));
    await vi.waitFor(() => expect(seen).toHaveLength(5));
    expect(bus.position()).toBe(seen[4]!.position);
    const [r1, , r3, r4] = seen.map((logged) => logged.position);
    expect((await bus.read(r1!, r4!, 100))?.map((logged) => logged.id)).toEqual(['r2', 'r3', 'r4']);
    expect((await bus.read(r1!, seen[4]!.position, 2))?.map((logged) => logged.id)).toEqual(['r2', 'r3']);
    expect(await bus.read(r3!, r3!, 100)).toEqual([]);
    expect((await bus.read(r3!, r4!, 100))?.[0]).toEqual(seen[3]);
    // A position the log never held.
    expect(await bus.read('1-0', r4!, 100)).toBeNull();
    await bus.close();
  });

  it('no longer reads from a position the retention took', async () => {
    const bus = openBus({ seconds: 3600, events: 2 });
    const seen: LoggedEvent[] = [];
    bus.subscribe((logged) => seen.push(logged));
    await bus.ready();
    // Redis trims whole nodes of a stream (MAXLEN ~): enough events that the first node goes.
    for (let i = 0; i < 300; i += 1) await bus.publish(event(`t${i}`));
    await vi.waitFor(() => expect(seen).toHaveLength(300));
    expect(await bus.read(seen[0]!.position, seen[299]!.position, 10)).toBeNull();
    expect((await bus.read(seen[298]!.position, seen[299]!.position, 10))?.map((logged) => logged.id)).toEqual(['t299']);
    await bus.close();
  });

  it('appends an event once when it is published twice (an outbox engine may carry it twice)', async () => {
    const bus = openBus({ seconds: 3600, events: 1000 });
    const seen: LoggedEvent[] = [];
    bus.subscribe((logged) => seen.push(logged));
    await bus.ready();
    await bus.publish(event('twice'));
    await bus.publish(event('twice'));
    await bus.publish(event('after'));
    await vi.waitFor(() => expect(seen.map((logged) => logged.id)).toEqual(['twice', 'after']));
    await bus.close();
  });
});
