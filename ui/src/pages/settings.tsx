/**
 * Settings: every configuration variable (GET /settings), grouped, with a search; read only
 * (netkeep is configured by its environment). Secrets arrive as •••• and never reach the page.
 * Also the backup download (GET /backup).
 */
import { useState } from 'preact/hooks';
import { Card, ErrorNote, useGet } from '../components';

interface Setting {
  readonly name: string;
  readonly group: string;
  readonly description: string;
  readonly value: string;
  readonly default: string;
  readonly source: 'environment' | '.env' | 'default';
  readonly secret: boolean;
  readonly restartRequired: boolean;
}

const sourceLabel: Record<Setting['source'], string> = {
  environment: 'environment',
  '.env': '.env file',
  default: 'default',
};

export function SettingsPage() {
  const loaded = useGet<{ settings: readonly Setting[] }>('/settings');
  const [query, setQuery] = useState('');
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  const shown = (loaded.data?.settings ?? []).filter((s) => {
    const text = `${s.name} ${s.description} ${s.group} ${s.secret ? '' : s.value}`.toLowerCase();
    return words.every((w) => text.includes(w));
  });
  // The server's own settings first, then the features in the order of the table.
  const groups = [...new Set(shown.map((s) => s.group))].sort(
    (a, b) => Number(b === 'Server') - Number(a === 'Server'),
  );
  return (
    <>
      <div class="page-head">
        <h1>Settings</h1>
      </div>
      <Card title="Backup" id="backup">
        <p class="muted">
          A consistent copy of the database, taken while netkeep keeps running. Put it back into a stopped
          server with <code>npm run restore -- &lt;file&gt;</code>.
        </p>
        <div class="action-row">
          <a class="button primary" href="/backup" download>
            Download backup
          </a>
        </div>
      </Card>
      <Card title="Configuration" id="configuration">
        <p class="muted">
          netkeep is configured by its environment (or a <code>.env</code> file); every value is read at
          start, so a change takes a restart. Secrets are shown as ••••.
        </p>
        <div class="field">
          <label for="settings-search">Search settings</label>
          <input
            id="settings-search"
            type="search"
            value={query}
            placeholder="name, meaning or value"
            onInput={(e) => {
              setQuery(e.currentTarget.value);
            }}
          />
        </div>
        <ErrorNote error={loaded.error} />
        {loaded.data && shown.length === 0 && <p class="muted">No setting matches “{query}”.</p>}
        {groups.map((group) => (
          <section key={group} class="settings-group" aria-label={group}>
            <h3>{group}</h3>
            <dl class="settings">
              {shown
                .filter((s) => s.group === group)
                .map((s) => (
                  <div key={s.name} class="setting" data-name={s.name}>
                    <dt>
                      <code>{s.name}</code>
                      <span class={`tag source-${s.source === '.env' ? 'file' : s.source}`}>
                        {sourceLabel[s.source]}
                      </span>
                      {s.restartRequired && <span class="tag">restart to change</span>}
                    </dt>
                    <dd>
                      <span class="mono value">
                        {s.value === '' ? <em class="muted">(empty)</em> : s.value}
                      </span>
                      <span class="hint">{s.description}</span>
                    </dd>
                  </div>
                ))}
            </dl>
          </section>
        ))}
      </Card>
    </>
  );
}
