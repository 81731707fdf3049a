import { afterAll, describe, expect, it } from 'vitest';
import { startHttpService, type HttpService } from '../../platform/http/server.js';
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
