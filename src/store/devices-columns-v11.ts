/**
 * The Devices columns of schema version 11 but devLastConnection, listed literally and frozen: the
 * change-log triggers of both stores compare them (SQLite's migrations 12 and 13, PostgreSQL's
 * migration 6), and a migration's SQL must not change when the device catalogue does later. A
 * migration that adds a Devices column recreates those triggers with a list of its own (the
 * change-log tests of both stores check the triggers against the table).
 */
export const devicesColumnsV11 = [
  'devMac',
  'devName',
  'devOwner',
  'devType',
  'devVendor',
  'devFavorite',
  'devGroup',
  'devComments',
  'devFirstConnection',
  'devLastIP',
  'devStaticIP',
  'devScan',
  'devLogEvents',
  'devAlertEvents',
  'devAlertDown',
  'devSkipRepeated',
  'devLastNotification',
  'devPresentLastScan',
  'devIsNew',
  'devLocation',
  'devIsArchived',
  'devParentMAC',
  'devParentPort',
  'devParentRelType',
  'devReqNicsOnline',
  'devIcon',
  'devGUID',
  'devSite',
  'devSSID',
  'devSyncHubNode',
  'devSourcePlugin',
  'devCustomProps',
  'devFQDN',
  'devCanSleep',
  'devMissesBeforeAbsent',
  'devPrimaryIPv6',
  'devNameSource',
  'devWatchPorts',
] as const;
