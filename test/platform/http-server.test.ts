import { createServer, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BodyTooLargeError, readBody, startHttpService, type HttpService } from '../../platform/http/server.js';
import { loadConfig } from '../../platform/runtime/config.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { registry } from '../../platform/telemetry/metrics.js';

describe('the HTTP server', () => {
  const lines: Array<Record<string, unknown>> = [];
  let service: HttpService | null = null;
  afterAll(async () => {
    await service?.close();
  });

  it('counts and logs a request whose client went away before the answer, as 499 under its route template', async () => {
    service = await startHttpService({
      name: 'abort-test',
      host: '127.0.0.1',
      port: 0,
      logger: createLogger('info', {}, (line) => void lines.push(JSON.parse(line) as Record<string, unknown>)),
      ready: async () => true,
      metrics: false,
      limits: loadConfig({ NODE_ENV: 'test' }).httpLimits,
      // Never answers: the client gives up first.
      handle: async (_req, _res, scope) => {
        scope.route = '/confirm/email/:SvcUserId/:confirmationCodeEmail';
      },
    });
    await fetch(`${service.url}/confirm/email/usr_1/123456`, { signal: AbortSignal.timeout(200) }).catch(() => null);
    const logged = async () => lines.find((line) => line.msg === 'request');
    for (let i = 0; i < 50 && !(await logged()); i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
    // The template, not the path: the code in it never reaches the log.
    expect(await logged()).toMatchObject({ status: 499, path: '/confirm/email/:SvcUserId/:confirmationCodeEmail' });
    expect(JSON.stringify(lines)).not.toContain('123456');
    const metrics = await registry.getSingleMetricAsString('http_server_request_duration_seconds');
    expect(metrics).toMatch(
      /http_server_request_duration_seconds_count\{service="abort-test",method="GET",route="\/confirm\/email\/:SvcUserId\/:confirmationCodeEmail",status="499"\} 1/,
    );
  });
});

describe('reading a request body', () => {
  /** What each request's read ended in, in the order they were received. */
  const outcomes: Array<{ text: string } | { error: unknown }> = [];
  let server: Server;
  let port = 0;
  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res) => {
      readBody(req, 16).then(
        (text) => {
          outcomes.push({ text });
          res.end(text);
        },
        (error: unknown) => {
          outcomes.push({ error });
          if (error instanceof BodyTooLargeError) res.writeHead(413, { connection: 'close' }).end();
        },
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** Sends `chunks` of a chunked POST one at a time on a raw socket; resolves with what came back once the socket closes. */
  const sendChunked = (chunks: readonly Buffer[], end: 'finish' | 'hang up') =>
    new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let received = '';
      socket.on('data', (data) => (received += data.toString('latin1')));
      socket.on('close', () => resolve(received));
      socket.on('error', reject);
      socket.write('POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n');
      for (const chunk of chunks)
        socket.write(Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]));
      if (end === 'finish') socket.write('0\r\n\r\n');
      else setTimeout(() => socket.destroy(), 50);
    });

  it('joins the chunks, a character split between two of them included', async () => {
    outcomes.length = 0;
    const euro = Buffer.from('€', 'utf8');
    const answer = await sendChunked(
      [Buffer.from('{"a":"'), euro.subarray(0, 1), Buffer.concat([euro.subarray(1), Buffer.from('"}')])],
      'finish',
    );
    expect(outcomes).toEqual([{ text: '{"a":"€"}' }]);
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
  });

  it('refuses a chunked body past the limit, and the socket still carries the answer', async () => {
    outcomes.length = 0;
    const answer = await sendChunked([Buffer.alloc(10, 'a'), Buffer.alloc(10, 'b'), Buffer.alloc(10, 'c')], 'finish');
    expect(outcomes).toEqual([{ error: new BodyTooLargeError(16) }]);
    expect(answer).toMatch(/^HTTP\/1\.1 413/);
  });

  it('fails, rather than waiting for ever, when the client hangs up before the body ends', async () => {
    outcomes.length = 0;
    await sendChunked([Buffer.from('{"a":')], 'hang up');
    for (let i = 0; i < 50 && outcomes.length === 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]).toHaveProperty('error');
  });
});
