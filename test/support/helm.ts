import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { findGo } from '../../platform/mongo/ferretdb.js';
import { userCacheDir } from '../../platform/runtime/config.js';

const run = promisify(execFile);

/** The Helm release the chart's test renders with. */
const HELM_VERSION = 'v3.22.0';
const MODULE = 'helm.sh/helm/v3/cmd/helm';

/** Where the Helm build is cached, shared by every clone of the project (as the FerretDB build is). */
function helmCachePath(env: Record<string, string | undefined> = process.env): string {
  return path.join(userCacheDir(env), `helm-${HELM_VERSION}`, 'helm');
}

/**
 * Returns a Helm binary: `HELM_BIN`, else the cached build, else builds `HELM_VERSION` once from
 * the Go module proxy into the cache (a few minutes; Go 1.22 or newer, as for FerretDB). The
 * version is stamped as the release's own build stamps it; `go install` leaves it empty.
 */
export async function ensureHelm(options: { helmBin?: string | undefined; progress?: (msg: string) => void } = {}): Promise<string> {
  const progress = options.progress ?? ((msg: string) => process.stderr.write(`${msg}\n`));
  if (options.helmBin) {
    if (!existsSync(options.helmBin)) throw new Error(`HELM_BIN points at ${options.helmBin}, which does not exist.`);
    return options.helmBin;
  }
  const target = helmCachePath();
  if (existsSync(target)) return target;
  const go = findGo();
  if (!go) {
    throw new Error(
      `The chart's test renders it with Helm ${HELM_VERSION}, built with Go on first use, and Go was not found ` +
        '(looked on PATH and in /usr/local/go/bin). Install Go 1.22 or newer (https://go.dev/dl/), or set HELM_BIN to a Helm 3 binary.',
    );
  }
  progress(`Building Helm ${HELM_VERSION} with Go, once, into ${path.dirname(target)} (a few minutes)...`);
  await mkdir(path.dirname(target), { recursive: true });
  // Built into a folder of its own beside the target, then renamed: a build cut short never looks finished.
  const work = await mkdtemp(path.join(path.dirname(target), 'build-'));
  try {
    await run(
      go,
      [
        'install',
        '-trimpath',
        '-ldflags',
        `-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}`,
        `${MODULE}@${HELM_VERSION}`,
      ],
      {
        env: { ...process.env, GOBIN: work, CGO_ENABLED: '0', GOFLAGS: '-mod=mod' },
        maxBuffer: 16 * 1024 * 1024,
        timeout: 20 * 60_000,
      },
    );
    await chmod(path.join(work, 'helm'), 0o755);
    await rename(path.join(work, 'helm'), target);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  progress(`Helm ${HELM_VERSION} is ready at ${target}.`);
  return target;
}
