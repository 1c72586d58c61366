/**
 * "Add device" (/ui/devices/new): a MAC and any editable fields, created with
 * `POST /device/<mac>` `{createNew: true}`; then the new device's page. A device that has no MAC of
 * its own (an unmanaged switch on the map) gets a made-up, locally administered one:
 * `?placeholder=switch` (the map's "Add an unmanaged switch") starts with one and type Switch.
 */
import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorNote, TextField, useAction } from '../components';
import { editable, FieldGroups, fromInput, toInput } from '../fields';
import { Link, navigate, useLocation } from '../router';

/** A random locally administered, unicast MAC (first octet x2, x6, xA or xE). */
function madeUpMac(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(6));
  bytes[0] = ((bytes[0] ?? 0) & 0xfc) | 0x02;
  return [...bytes].map((b) => b.toString(16).padStart(2, '0')).join(':');
}

// A new device's name starts empty (its stored default is the text '(unknown)').
const initial = Object.fromEntries(
  editable.map((f) => [f.name, toInput(f, f.name === 'devName' ? '' : f.default)]),
);

export function AddDevicePage() {
  // From the map's "Add an unmanaged switch": a Switch with a made-up MAC, ready to hang devices under.
  const placeholder = useLocation().search.get('placeholder') === 'switch';
  const [mac, setMac] = useState(() => (placeholder ? madeUpMac() : ''));
  const [values, setValues] = useState(() =>
    placeholder ? { ...initial, devType: 'Switch', devName: 'Unmanaged switch' } : initial,
  );
  const create = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    const given = mac.trim();
    const ok = await create.run(async () => {
      if (given === '') throw new Error('Give the MAC address of the device.');
      const changed = editable.filter((f) => values[f.name] !== initial[f.name]);
      const body = Object.fromEntries(changed.map((f) => [f.name, fromInput(f, values[f.name] ?? '')]));
      await api('POST', `/device/${encodeURIComponent(given)}`, { body: { createNew: true, ...body } });
    });
    // The server accepts several spellings of a MAC; the device page finds it by any of them.
    if (ok) navigate(`/devices/${encodeURIComponent(given)}`);
  };

  return (
    <>
      <div class="page-head">
        <h1>Add device</h1>
        <Link href="/">Back to the devices</Link>
      </div>
      <form class="device-form" aria-label="New device" onSubmit={(e) => void submit(e)}>
        <fieldset>
          <legend>Address</legend>
          <div class="grid">
            <TextField
              id="new-mac"
              label="MAC address"
              value={mac}
              onValue={setMac}
              placeholder="aa:bb:cc:dd:ee:ff"
            />
            <div class="field">
              <span class="label-gap" aria-hidden="true" />
              <button
                type="button"
                onClick={() => {
                  setMac(madeUpMac());
                }}
              >
                Make up a MAC
              </button>
              <small class="hint">For a device with no MAC of its own, e.g. an unmanaged switch.</small>
            </div>
          </div>
        </fieldset>
        <FieldGroups
          values={values}
          onChange={(name, v) => {
            setValues((old) => ({ ...old, [name]: v }));
          }}
        />
        <div class="form-actions sticky">
          <button type="submit" class="primary" disabled={create.running}>
            {create.running ? 'Adding…' : 'Add device'}
          </button>
          <ErrorNote error={create.error} />
        </div>
      </form>
    </>
  );
}
