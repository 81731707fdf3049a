import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { cp, chmod, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { MongoClient } from 'mongodb';
import { userCacheDir } from '../runtime/config.js';

const run = promisify(execFile);

/** The embedded MongoDB-compatible server: FerretDB with its SQLite backend. */
const FERRETDB_VERSION = 'v1.24.2';
const MODULE = 'github.com/FerretDB/FerretDB';
/**
 * Patches applied to the module source before the build (`platform/mongo/ferretdb-patches/`), in order.
 * `equality-pushdown`: a filter's top-level equalities and `$in` lists (strings, booleans, ObjectIDs,
 * null) narrow the rows in SQL through the collection's indexes, and writes by `_id` use the `_id`
 * index; upstream read and decoded the whole table for every query but `{_id: v}` and scanned it
 * for every update and delete (docs/database.md).
 * `atomic-writes`: update, findAndModify and delete hold a per-collection lock from reading the
 * matching documents to writing them back, so they are atomic as on MongoDB (upstream lost
 * concurrent increments); `buildInfo` reports it as `ferretdbFeatures.atomicWrites`.
 * `wal-checkpoints`: a goroutine per database checkpoints its SQLite WAL every 100 ms instead of
 * the committing writer; upstream's automatic checkpoint could not complete while writes never paused,
 * so every commit past the threshold sorted the whole WAL and synced it (updates by _id 590-930/s
 * before, 1,360-1,820/s after).
 * `leak-tracking`: FerretDB's leak tracking (a stack captured and a finalizer set for every
 * cursor, iterator and transaction) only in its debug builds.
 */
const PATCHES = ['equality-pushdown.patch', 'atomic-writes.patch', 'wal-checkpoints.patch', 'leak-tracking.patch'];
const PATCH_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'ferretdb-patches');
/** Names the build by the patches' content, so that a changed patch never reuses a binary built without it. */
const BUILD = `${FERRETDB_VERSION}-${createHash('sha256')
  .update(PATCHES.map((patch) => readFileSync(path.join(PATCH_DIR, patch))).join('\0'))
  .digest('hex')
  .slice(0, 8)}`;

/** Where the FerretDB build for this version and these patches is cached, shared by every clone of the project. */
function ferretdbCachePath(env: Record<string, string | undefined> = process.env): string {
  return path.join(userCacheDir(env), `ferretdb-${BUILD}`, 'ferretdb');
}

/** The Go toolchain: on PATH, else where its installer puts it; null when neither has it. */
export function findGo(): string | null {
  for (const dir of [...(process.env.PATH ?? '').split(path.delimiter), '/usr/local/go/bin']) {
    if (dir && existsSync(path.join(dir, 'go'))) return path.join(dir, 'go');
  }
  return null;
}

/**
 * Returns a FerretDB binary: `FERRETDB_BIN`, else the cached build, else builds it once from
 * the Go module proxy into the cache. The build copies the module source and writes its
 * `build/version/version.txt`, which the published module leaves empty (a plain
 * `go install ...@v1.24.2` binary panics on start because of that), and applies `PATCHES`.
 */
async function ensureFerretDB(options: { ferretdbBin?: string | undefined; progress?: (msg: string) => void } = {}): Promise<string> {
  const progress = options.progress ?? ((msg: string) => process.stderr.write(`${msg}\n`));
  if (options.ferretdbBin) {
    if (!existsSync(options.ferretdbBin)) throw new Error(`FERRETDB_BIN points at ${options.ferretdbBin}, which does not exist.`);
    return options.ferretdbBin;
  }
  const target = ferretdbCachePath();
  if (existsSync(target)) return target;

  const go = findGo();
  if (!go) {
    throw new Error(
      'The embedded database (FerretDB ' +
        FERRETDB_VERSION +
        ') is built with Go on first use, and Go was not found ' +
        '(looked on PATH and in /usr/local/go/bin). Install Go 1.22 or newer (https://go.dev/dl/), ' +
        'or set FERRETDB_BIN to a FerretDB binary, or set MONGODB_URI to use your own MongoDB.',
    );
  }
  progress(`Building the embedded database FerretDB ${BUILD} with Go, once, into ${path.dirname(target)} (about two minutes)...`);
  const goEnv = { ...process.env, GOFLAGS: '-mod=mod', CGO_ENABLED: '0' };
  const { stdout } = await run(go, ['mod', 'download', '-json', `${MODULE}@${FERRETDB_VERSION}`], {
    env: goEnv,
    maxBuffer: 16 * 1024 * 1024,
  });
  const moduleDir = (JSON.parse(stdout) as { Dir?: string }).Dir;
  if (!moduleDir) throw new Error(`go mod download did not report the source folder of ${MODULE}@${FERRETDB_VERSION}`);
  const work = await mkdtemp(path.join(tmpdir(), 'ferretdb-build-'));
  try {
    const src = path.join(work, 'src');
    await cp(moduleDir, src, { recursive: true });
    await run('chmod', ['-R', 'u+w', src]);
    await writeFile(path.join(src, 'build', 'version', 'version.txt'), `${FERRETDB_VERSION}\n`);
    // git apply works outside a repository (the ceiling keeps it from finding one around the temporary folder).
    for (const patch of PATCHES) {
      await run('git', ['apply', path.join(PATCH_DIR, patch)], { cwd: src, env: { ...process.env, GIT_CEILING_DIRECTORIES: work } });
    }
    await mkdir(path.dirname(target), { recursive: true });
    const partial = `${target}.${process.pid}.partial`;
    await run(go, ['build', '-o', partial, './cmd/ferretdb'], { cwd: src, env: goEnv, maxBuffer: 16 * 1024 * 1024 });
    await chmod(partial, 0o755);
    await rename(partial, target);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  progress(`FerretDB ${BUILD} is ready at ${target}.`);
  return target;
}

/** Finds a free loopback port by binding port 0. */
export async function freePort(): Promise<number> {
  const reservation = await reservePort();
  await reservation.release();
  return reservation.port;
}

/**
 * Holds a free loopback port until `release`: for a server that must be named before it can start
 * (the gateway, whose URL the subgraphs are given first), so that nothing else binds it meanwhile.
 */
export function reservePort(): Promise<{ port: number; release(): Promise<void> }> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      resolve({ port, release: () => new Promise<void>((released) => server.close(() => released())) });
    });
  });
}

/** A running embedded FerretDB. */
export interface EmbeddedMongo {
  uri: string;
  /** The server's process id (the benchmarks read its CPU time). */
  pid: number | undefined;
  stop(): Promise<void>;
}

/** Starts FerretDB on a loopback port (a free one unless given) with its data in `dataDir`, and waits until it answers. */
export async function startEmbeddedMongo(options: {
  dataDir: string;
  ferretdbBin?: string | undefined;
  progress?: (msg: string) => void;
  port?: number;
}): Promise<EmbeddedMongo> {
  const binary = await ensureFerretDB(options);
  await mkdir(options.dataDir, { recursive: true });
  const port = options.port ?? (await freePort());
  const child: ChildProcess = spawn(
    binary,
    [
      '--handler=sqlite',
      // WAL commits are not synced one by one; see docs/database.md, for what that means.
      `--sqlite-url=file:${options.dataDir}/?_pragma=synchronous(NORMAL)`,
      `--state-dir=${options.dataDir}`,
      `--listen-addr=127.0.0.1:${port}`,
      '--debug-addr=-',
      '--telemetry=disable',
      '--log-level=error',
    ],
    // A heap five times the live data before each collection (Go's default: twice): fewer
    // collections, less CPU per command, on a small live heap. A GOGC of the user's own wins.
    { stdio: ['ignore', 'ignore', 'pipe'], env: { GOGC: '400', ...process.env } },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const uri = `mongodb://127.0.0.1:${port}/`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`FerretDB exited on start (code ${child.exitCode}): ${stderr}`);
    const client = new MongoClient(uri, { serverSelectionTimeoutMS: 500, connectTimeoutMS: 500 });
    try {
      await client.db('admin').command({ ping: 1 });
      break;
    } catch (error) {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`FerretDB did not answer on ${uri} within 30 s: ${(error as Error).message} ${stderr}`, { cause: error });
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      await client.close();
    }
  }
  return {
    uri,
    pid: child.pid,
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}
