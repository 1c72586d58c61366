/**
 * A small router over the History API: every page has its own URL under /ui/, links change the
 * URL without reloading, and the server answers the same shell for any /ui/ path, so a reload or a
 * shared link opens the same page.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

export const base = '/ui';

const listeners = new Set<() => void>();
window.addEventListener('popstate', () => {
  for (const l of listeners) l();
});

/** Goes to a console path (`/devices/..`), adding a history entry unless `replace`. */
export function navigate(path: string, replace = false): void {
  const url = path.startsWith(base) ? path : base + path;
  if (url === location.pathname + location.search) return;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  for (const l of listeners) l();
}

/** The current location, re-rendering on every change. */
export function useLocation(): { path: string; search: URLSearchParams } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const listener = () => {
      setTick((t) => t + 1);
    };
    listeners.add(listener);
    return () => listeners.delete(listener);
  }, []);
  const path = location.pathname.startsWith(base) ? location.pathname.slice(base.length) || '/' : '/';
  return { path, search: new URLSearchParams(location.search) };
}

/** Replaces the query string of the current page (filters that a reload should keep). */
export function setQuery(values: Record<string, string | number | undefined>): void {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values))
    if (value !== undefined && value !== '') params.set(key, String(value));
  const query = params.toString();
  navigate(location.pathname + (query ? `?${query}` : ''), true);
}

interface LinkProps {
  readonly href: string;
  readonly children: ComponentChildren;
  readonly class?: string;
  readonly 'aria-current'?: 'page';
}

/** An ordinary link (open in a new tab works) that navigates in place on a plain click. */
export function Link({ href, children, ...rest }: LinkProps) {
  const url = base + href;
  return (
    <a
      {...rest}
      href={url}
      onClick={(event) => {
        if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
        event.preventDefault();
        navigate(url);
      }}
    >
      {children}
    </a>
  );
}
