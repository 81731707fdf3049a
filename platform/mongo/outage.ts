import {
  MongoNetworkError,
  MongoNotConnectedError,
  MongoServerClosedError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
} from 'mongodb';

/** Server error codes of a database that is shutting down or stepping down: it will be back. */
const DATABASE_GOING_AWAY = new Set([91, 189, 11600, 11602, 13435, 13436]);

/**
 * Codes of a connection the other side dropped. The database driver passes some of these on
 * unwrapped: a pooled connection the stopping server had closed fails its next write with Node's
 * own EPIPE ("This socket has been ended by the other party"), not a MongoNetworkError.
 */
const CONNECTION_DROPPED = new Set(['EPIPE', 'ECONNRESET', 'ECONNREFUSED']);

/** True when an error is a connection the other side dropped, passed on as Node's own error. */
export function isConnectionDropped(error: unknown): boolean {
  return error instanceof Error && CONNECTION_DROPPED.has((error as NodeJS.ErrnoException).code ?? '');
}

/** True when an error means the database cannot be reached now (down, restarting, unreachable), not that the request is wrong. */
export function isDatabaseUnavailable(error: unknown): boolean {
  return (
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoServerClosedError ||
    error instanceof MongoTopologyClosedError ||
    (error instanceof MongoServerError && typeof error.code === 'number' && DATABASE_GOING_AWAY.has(error.code))
  );
}
