import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookReceiver } from '../../scripts/lib/webhook-receiver.js';
import { checkWebhookTarget, deliverWebhook, isInternalAddress, newWebhookSecret, postPinned } from '../../platform/messaging/webhooks.js';

describe('webhook delivery', () => {
  const secret = newWebhookSecret();
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  beforeAll(async () => {
    receiver = await startWebhookReceiver(secret);
  });
  afterAll(async () => {
    await receiver.close();
  });

  it.each([
    ['127.0.0.1', true],
    ['10.1.2.3', true],
    ['172.20.0.1', true],
    ['192.168.1.1', true],
    ['169.254.169.254', true],
    ['100.64.0.1', true],
    ['::1', true],
    ['fd00::1', true],
    ['fe80::1', true],
    ['::ffff:127.0.0.1', true],
    ['8.8.8.8', false],
    ['172.32.0.1', false],
    ['2001:4860:4860::8888', false],
  ])('judges %s internal: %s', (address, internal) => {
    expect(isInternalAddress(address)).toBe(internal);
  });

  it('signs what it sends so that the receiver verifies it, and returns the reply', async () => {
    const outcome = await deliverWebhook({ url: receiver.url, secret }, { hello: 'world' }, 2000, { allowInternal: true });
    expect(outcome).toMatchObject({ kind: 'reply', status: 200, body: { responseCode: '00' } });
    expect(receiver.received.at(-1)).toMatchObject({ verified: true, payload: { hello: 'world' } });
  });

  it('does not call an internal address unless configuration allows it', async () => {
    const before = receiver.received.length;
    const outcome = await deliverWebhook({ url: receiver.url, secret }, { hello: 'again' }, 2000, { allowInternal: false });
    expect(outcome).toMatchObject({ kind: 'unreachable' });
    expect(receiver.received.length).toBe(before);
    const named = await deliverWebhook({ url: receiver.url.replace('127.0.0.1', 'localhost'), secret }, {}, 2000, { allowInternal: false });
    expect(named.kind).toBe('unreachable');
  });

  it('reports a silent endpoint as a timeout', async () => {
    receiver.setMode({ silent: true });
    const outcome = await deliverWebhook({ url: receiver.url, secret }, {}, 300, { allowInternal: true });
    expect(outcome.kind).toBe('timeout');
    receiver.setMode({ reply: '00' });
  });
});

describe('checking a webhook URL when it is configured', () => {
  it('refuses plain http, loopback, private and link-local targets unless configuration allows them', async () => {
    for (const [url, message] of [
      ['http://example.com/hook', /https URL/],
      ['https://127.0.0.1/hook', /loopback, private or link-local/],
      ['https://localhost:8443/hook', /loopback, private or link-local/],
      ['https://10.1.2.3/hook', /loopback, private or link-local/],
      ['https://169.254.169.254/latest', /loopback, private or link-local/],
      ['https://[::1]/hook', /loopback, private or link-local/],
      ['https://[::127.0.0.1]/hook', /loopback, private or link-local/],
      ['https://[64:ff9b::7f00:1]/hook', /loopback, private or link-local/],
      ['https://198.18.0.1/hook', /loopback, private or link-local/],
      ['https://255.255.255.255/hook', /loopback, private or link-local/],
      ['ftp://example.com/hook', /http\(s\) URL/],
      ['not a url', /absolute http\(s\) URL/],
    ] as const) {
      await expect(checkWebhookTarget(url, 'webhookUrl', false), url).rejects.toThrow(message);
    }
    expect(await checkWebhookTarget('https://93.184.216.34/hook', 'webhookUrl', false)).toBe('https://93.184.216.34/hook');
    expect(await checkWebhookTarget('http://127.0.0.1:9000/webhooks', 'webhookUrl', true)).toBe('http://127.0.0.1:9000/webhooks');
  });
});

describe('IPv6 forms of internal addresses and special-purpose ranges', () => {
  // Each form as a URL, so that the URL parser's own spelling (dotted parts turned into hex) is what is judged.
  it.each([
    ['6to4 embedding 127.0.0.1', 'https://[2002:7f00:1::1]/'],
    ['6to4 embedding 10.0.0.1', 'https://[2002:a00:1::]/'],
    ['6to4 embedding a public address (refused whole: a tunnel)', 'https://[2002:5db8:d822::1]/'],
    ['IPv4-mapped 127.0.0.1, dotted', 'https://[::ffff:127.0.0.1]/'],
    ['IPv4-mapped 169.254.169.254, hex', 'https://[::ffff:a9fe:a9fe]/'],
    ['IPv4-mapped 192.168.1.1, expanded', 'https://[0:0:0:0:0:ffff:c0a8:101]/'],
    ['IPv4-translated 127.0.0.1', 'https://[::ffff:0:7f00:1]/'],
    ['IPv4-compatible 127.0.0.1', 'https://[::127.0.0.1]/'],
    ['IPv4-compatible 8.8.8.8 (deprecated form)', 'https://[::808:808]/'],
    ['NAT64 embedding 127.0.0.1', 'https://[64:ff9b::127.0.0.1]/'],
    ['NAT64 embedding 10.1.2.3', 'https://[64:ff9b::a01:203]/'],
    ['local-use NAT64', 'https://[64:ff9b:1::808:808]/'],
    ['Teredo', 'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/'],
    ['Teredo embedding 127.0.0.1 as client', 'https://[2001:0:0:0:0:0:80ff:fffe]/'],
    ['benchmarking', 'https://[2001:2::1]/'],
    ['ORCHIDv2', 'https://[2001:20::1]/'],
    ['documentation', 'https://[2001:db8::1]/'],
    ['documentation (3fff::/20)', 'https://[3fff::1]/'],
    ['discard-only', 'https://[100::1]/'],
    ['SRv6 SIDs', 'https://[5f00::1]/'],
    ['unspecified', 'https://[::]/'],
    ['unique-local', 'https://[fc00::1]/'],
    ['site-local', 'https://[fec0::1]/'],
    ['link-local', 'https://[fe80::1]/'],
    ['multicast', 'https://[ff02::1]/'],
    ['IPv4 documentation TEST-NET-1', 'https://192.0.2.1/'],
    ['IPv4 documentation TEST-NET-2', 'https://198.51.100.7/'],
    ['IPv4 documentation TEST-NET-3', 'https://203.0.113.9/'],
    ['the 6to4 relay anycast', 'https://192.88.99.1/'],
    ['127.0.0.1 spelt as one number', 'https://2130706433/'],
    ['127.0.0.1 spelt in hex', 'https://0x7f.1/'],
  ])('refuses %s in production', async (_form, url) => {
    await expect(checkWebhookTarget(url, 'webhookUrl', false)).rejects.toThrow(
      /webhookUrl must not point at a loopback, private or link-local address/,
    );
  });

  it.each([
    ['a public IPv6 address', 'https://[2606:4700:4700::1111]/', '2606:4700:4700::1111'],
    ['NAT64 embedding a public IPv4 address', 'https://[64:ff9b::5db8:d822]/', '64:ff9b::5db8:d822'],
    ['IPv4-mapped public address', 'https://[::ffff:5db8:d822]/', '::ffff:5db8:d822'],
  ])('accepts %s', async (_form, url, address) => {
    expect(isInternalAddress(address)).toBe(false);
    expect(await checkWebhookTarget(url, 'webhookUrl', false)).toBe(url);
  });

  it('counts what is not an address as internal', () => {
    for (const text of ['', 'example.com', '1::2::3', '::ffff:999.1.1.1']) expect(isInternalAddress(text), text).toBe(true);
  });
});

describe('calling a webhook at the address that was checked', () => {
  it('connects to the pinned address, not to a fresh resolution of the host name', async () => {
    const receiver = await startWebhookReceiver(newWebhookSecret());
    try {
      const port = new URL(receiver.url).port;
      // The name does not resolve at all: only the pinned address can be reached.
      const reply = await postPinned(
        new URL(`http://rebinding.invalid:${port}/hook`),
        { 'content-type': 'application/json' },
        '{}',
        AbortSignal.timeout(2000),
        { address: '127.0.0.1', family: 4 },
      );
      expect(reply.status).toBe(401);
      await expect(
        postPinned(new URL(`http://rebinding.invalid:${port}/hook`), {}, '{}', AbortSignal.timeout(2000), null),
      ).rejects.toThrow();
    } finally {
      await receiver.close();
    }
  });
});

describe('connections to a webhook receiver', () => {
  /** A raw HTTP/1.1 server: counts connections, answers 200 with keep-alive, and resets a connection on its `resetOn`-th request. */
  const startRawReceiver = async (resetOn: number, address = '127.0.0.1', port = 0) => {
    let connections = 0;
    let requests = 0;
    const open = new Set<net.Socket>();
    const server = net.createServer((socket) => {
      connections += 1;
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      let buffered = '';
      socket.on('data', (chunk) => {
        buffered += chunk.toString('latin1');
        // Each request here is headers plus a 2-byte body ('{}').
        while (buffered.includes('\r\n\r\n') && buffered.length >= buffered.indexOf('\r\n\r\n') + 6) {
          buffered = buffered.slice(buffered.indexOf('\r\n\r\n') + 6);
          requests += 1;
          if (requests === resetOn) {
            socket.resetAndDestroy();
            return;
          }
          socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\n{}');
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(port, address, resolve));
    return {
      url: new URL(`http://${address}:${(server.address() as AddressInfo).port}/hook`),
      counts: () => ({ connections, requests }),
      close: () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          for (const socket of open) socket.destroy();
        }),
    };
  };
  const pinned = { address: '127.0.0.1', family: 4 };

  it('reuses one kept-alive connection for successive webhooks to the same address', async () => {
    const receiver = await startRawReceiver(0);
    try {
      for (let i = 0; i < 3; i += 1)
        expect(
          (await postPinned(receiver.url, { 'content-type': 'application/json' }, '{}', AbortSignal.timeout(2000), pinned)).status,
        ).toBe(200);
      expect(receiver.counts()).toEqual({ connections: 1, requests: 3 });
    } finally {
      await receiver.close();
    }
  });

  it('sends once more on a new connection when the receiver resets a reused one', async () => {
    const receiver = await startRawReceiver(2);
    try {
      expect((await postPinned(receiver.url, { 'content-type': 'application/json' }, '{}', AbortSignal.timeout(2000), pinned)).status).toBe(
        200,
      );
      // The second request goes out on the kept-alive connection, which the receiver resets.
      expect((await postPinned(receiver.url, { 'content-type': 'application/json' }, '{}', AbortSignal.timeout(2000), pinned)).status).toBe(
        200,
      );
      expect(receiver.counts()).toEqual({ connections: 2, requests: 3 });
    } finally {
      await receiver.close();
    }
  });

  it('never reuses a connection opened to one checked address for another address of the same host name', async () => {
    const first = await startRawReceiver(0, '127.0.0.1');
    // The same port on another loopback address: one host name that resolved differently.
    const second = await startRawReceiver(0, '127.0.0.2', Number(first.url.port));
    try {
      const url = new URL(`http://receiver.invalid:${first.url.port}/hook`);
      for (const address of ['127.0.0.1', '127.0.0.2', '127.0.0.1', '127.0.0.2']) {
        expect(
          (await postPinned(url, { 'content-type': 'application/json' }, '{}', AbortSignal.timeout(2000), { address, family: 4 })).status,
        ).toBe(200);
      }
      expect(first.counts()).toEqual({ connections: 1, requests: 2 });
      expect(second.counts()).toEqual({ connections: 1, requests: 2 });
    } finally {
      await first.close();
      await second.close();
    }
  });
});
