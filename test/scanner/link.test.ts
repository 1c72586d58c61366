import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { interfaceProblem } from '../../src/scanner/link.js';

describe('interfaceProblem (link state from sysfs)', () => {
  // A stand-in for /sys/class/net: one directory per interface holding its operstate.
  const sysfs = mkdtempSync(join(tmpdir(), 'netkeep-sysfs-'));
  after(() => {
    rmSync(sysfs, { recursive: true, force: true });
  });
  const states = {
    eth0: 'up',
    lo: 'unknown',
    wl0: 'dormant',
    off0: 'down',
    vlan5: 'lowerlayerdown',
    gone0: 'notpresent',
  };
  for (const [name, state] of Object.entries(states)) {
    mkdirSync(join(sysfs, name));
    writeFileSync(join(sysfs, name, 'operstate'), `${state}\n`);
  }

  test('up, unknown (no carrier detection) and dormant are left to the tool', () => {
    for (const name of ['eth0', 'lo', 'wl0']) assert.equal(interfaceProblem(name, sysfs), undefined);
  });

  test('down (admin down or no carrier), lowerlayerdown and notpresent are refused with a reason', () => {
    assert.equal(
      interfaceProblem('off0', sysfs),
      'interface off0 is down (operstate down: administratively down or no carrier)',
    );
    assert.match(interfaceProblem('vlan5', sysfs) ?? '', /vlan5 is down \(operstate lowerlayerdown/);
    assert.match(interfaceProblem('gone0', sysfs) ?? '', /gone0 is down \(operstate notpresent/);
  });

  test('a missing interface, and the path steps . and .., do not exist', () => {
    for (const name of ['nosuch0', '.', '..'])
      assert.equal(interfaceProblem(name, sysfs), `interface ${name} does not exist`);
  });

  test('without sysfs (not Linux) there is no verdict', () => {
    assert.equal(interfaceProblem('eth0', join(sysfs, 'absent')), undefined);
  });

  test('the real sysfs: loopback is usable', () => {
    assert.equal(interfaceProblem('lo'), undefined);
  });
});
