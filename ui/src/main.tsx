/**
 * The console's entry: the frame (header, navigation, sign-out), the sign-in gate and the page of
 * the current URL.
 */
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, describe, get, onAuthorized, onSignedOut, signIn } from './api';
import { Busy, ErrorNote } from './components';
import { DevicePage } from './pages/device';
import { DeviceList } from './pages/devices';
import { AddDevicePage } from './pages/add-device';
import { EventsPage } from './pages/events';
import { MapPage } from './pages/map';
import { NotificationsPage } from './pages/notifications';
import { ProbesPage } from './pages/probes';
import { ScanPage } from './pages/scan';
import { SettingsPage } from './pages/settings';
import { ToolsPage } from './pages/tools';
import { Link, useLocation } from './router';
import './styles.css';

type Auth = 'checking' | 'signed-in' | 'signed-out';

const navItems = [
  { href: '/', label: 'Devices', match: (p: string) => p === '/' || p.startsWith('/devices') },
  { href: '/map', label: 'Map', match: (p: string) => p.startsWith('/map') },
  { href: '/events', label: 'Events', match: (p: string) => p.startsWith('/events') },
  { href: '/tools', label: 'Tools', match: (p: string) => p.startsWith('/tools') },
  { href: '/scan', label: 'Scan', match: (p: string) => p.startsWith('/scan') },
  { href: '/probes', label: 'Probes', match: (p: string) => p.startsWith('/probes') },
  { href: '/notifications', label: 'Notifications', match: (p: string) => p.startsWith('/notifications') },
  { href: '/settings', label: 'Settings', match: (p: string) => p.startsWith('/settings') },
];

function SignIn({ onSignedIn }: { readonly onSignedIn: () => void }) {
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);
  const submit = async (event: Event) => {
    event.preventDefault();
    const token = input.current?.value ?? '';
    if (token === '') {
      setError('Enter the API token.');
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      await signIn(token);
      if (input.current) input.current.value = '';
      onSignedIn();
    } catch (err) {
      setError(describe(err));
      input.current?.select();
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin" id="main">
      <form onSubmit={(e) => void submit(e)} class="card">
        <h1>
          <span class="logo" aria-hidden="true" />
          netkeep
        </h1>
        <p class="muted">Sign in with the API token (API_TOKEN, or the file $DATA_DIR/api_token).</p>
        <label for="token">API token</label>
        <input id="token" name="token" type="password" autoComplete="current-password" ref={input} required />
        <ErrorNote error={error} />
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}

function Page({ path }: { readonly path: string }) {
  if (path === '/' || path === '/devices' || path === '/devices/') return <DeviceList />;
  if (path === '/devices/new') return <AddDevicePage />;
  const device = /^\/devices\/([^/]+)$/.exec(path);
  if (device?.[1]) return <DevicePage mac={decodeURIComponent(device[1])} />;
  if (path === '/events') return <EventsPage />;
  if (path === '/tools') return <ToolsPage />;
  if (path === '/scan') return <ScanPage />;
  if (path === '/notifications') return <NotificationsPage />;
  if (path === '/settings') return <SettingsPage />;
  if (path === '/map') return <MapPage />;
  if (path === '/probes') return <ProbesPage />;
  return (
    <div class="card">
      <h1>Page not found</h1>
      <p>
        There is no console page at <code>/ui{path}</code>. <Link href="/">Go to the devices.</Link>
      </p>
    </div>
  );
}

function App() {
  // The page's own requests tell whether the session is valid (no extra round trip first): the
  // frame stays hidden until one is authorised, and a 403 shows the sign-in form instead.
  const [auth, setAuth] = useState<Auth>('checking');
  const { path } = useLocation();
  useEffect(
    () =>
      onSignedOut(() => {
        setAuth('signed-out');
      }),
    [],
  );
  useEffect(
    () =>
      onAuthorized(() => {
        setAuth((a) => (a === 'checking' ? 'signed-in' : a));
      }),
    [],
  );
  // A page that asks nothing at first (tools) still needs an answer: one small request, in
  // parallel with the page's own.
  useEffect(() => {
    get('/devices/totals').catch(() => undefined);
  }, []);

  if (auth === 'signed-out')
    return (
      <SignIn
        onSignedIn={() => {
          setAuth('signed-in');
        }}
      />
    );

  const signOut = async () => {
    try {
      await api('DELETE', '/session');
    } finally {
      setAuth('signed-out');
    }
  };
  return (
    <div class={auth === 'checking' ? 'pending' : undefined}>
      {auth === 'checking' && (
        <div class="pending-note">
          <Busy label="Loading…" />
        </div>
      )}
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <Link href="/" class="brand">
          <span class="logo" aria-hidden="true" />
          netkeep
        </Link>
        <nav aria-label="Pages">
          {navItems.map((item) => (
            <Link key={item.href} href={item.href} aria-current={item.match(path) ? 'page' : undefined}>
              {item.label}
            </Link>
          ))}
        </nav>
        <button type="button" class="quiet" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <Page path={path} />
      </main>
    </div>
  );
}

const root = document.getElementById('app');
if (root) {
  root.textContent = '';
  render(<App />, root);
}
