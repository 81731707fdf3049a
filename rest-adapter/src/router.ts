import type { Route } from './routes/index.js';

/** A route with its paths compiled to matchers. */
interface CompiledPath {
  route: Route;
  /** The path as the route declares it (`/svc/v1/accounts/:SvcAccountId`). */
  template: string;
  pattern: RegExp;
  names: string[];
}

/** Path parameters are one segment of URL-safe characters; their patterns are checked by the graph. */
function compile(route: Route, path: string): CompiledPath {
  const names: string[] = [];
  const source = path
    .split('/')
    .map((segment) => {
      if (!segment.startsWith(':')) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      names.push(segment.slice(1));
      return '([^/]+)';
    })
    .join('/');
  return { route, template: path, pattern: new RegExp(`^${source}/?$`), names };
}

/** Finds the route of a method and path; tells apart an unknown path (404) from a known path with another method (405). */
export function createRouter(routes: Route[]) {
  const compiled = routes.flatMap((route) => route.paths.map((path) => compile(route, path)));
  return (
    method: string,
    pathname: string,
  ): { route: Route; template: string; params: Record<string, string>; undecodable?: string } | { allowed: string[] } | null => {
    const allowed: string[] = [];
    for (const { route, template, pattern, names } of compiled) {
      const match = pattern.exec(pathname);
      if (!match) continue;
      if (route.method !== method) {
        allowed.push(route.method);
        continue;
      }
      const params: Record<string, string> = {};
      // A malformed percent escape (`%E0%A4%A`, a bare `%`) is refused by the route as a bad request, naming the parameter.
      let undecodable: string | undefined;
      names.forEach((name, i) => {
        const raw = match[i + 1] ?? '';
        try {
          params[name] = decodeURIComponent(raw);
        } catch {
          params[name] = raw;
          undecodable ??= name;
        }
      });
      return undecodable === undefined ? { route, template, params } : { route, template, params, undecodable };
    }
    return allowed.length > 0 ? { allowed } : null;
  };
}
