// The verdict on one object's full-context `kubectl diff --show-managed-fields`: a change only
// when a field racksmith applies differs (src/kube/applied-diff.ts). The diffs below are shaped as
// kubectl prints them (GNU diff -N -U<large>, the probe's awk drops the file headers).
import { describe, expect, it } from 'vitest';
import { appliedChange, diffLines, unifiedHunks, withoutManagedFields } from '../../src/kube/applied-diff.ts';

const M = 'racksmith';

/** A full-context diff body from the two sides (common lines first, then the differing ones). */
function body(lines: string[]): string {
  return [`@@ -1,${lines.length} +1,${lines.length} @@`, ...lines].join('\n');
}

// A Secret MetalLB's manifest ships empty: racksmith applies no field of it. The cert-rotator
// ("controller") filled it between kubectl's read and its dry run.
const secretFilledMeanwhile = body([
  ' apiVersion: v1',
  '+data:',
  "+  ca.crt: '***'",
  "+  tls.key: '***'",
  ' kind: Secret',
  ' metadata:',
  '-  managedFields: []',
  '+  managedFields:',
  '+  - apiVersion: v1',
  '+    fieldsType: FieldsV1',
  '+    fieldsV1:',
  '+      f:data:',
  '+        f:ca.crt: {}',
  '+        f:tls.key: {}',
  '+    manager: controller',
  '+    operation: Update',
  '   name: metallb-webhook-cert',
  '   namespace: metallb-system',
  '-  resourceVersion: "35"',
  '+  resourceVersion: "44"',
  ' type: Opaque',
]);

/** A webhook configuration racksmith applies (its service), with a caBundle and/or a path changed. */
function webhookDiff(o: { caBundleAdded: boolean; pathChanged: boolean }): string {
  const entry = [
    '  - apiVersion: admissionregistration.k8s.io/v1',
    '    fieldsType: FieldsV1',
    '    fieldsV1:',
    '      f:webhooks:',
    '        k:{"name":"a.metallb.io"}:',
    '          .: {}',
    '          f:clientConfig:',
    '            f:service:',
    '              f:name: {}',
    '              f:path: {}',
    '          f:name: {}',
    '    manager: racksmith',
    '    operation: Apply',
  ].map((l) => ' ' + l);
  return body([
    ' apiVersion: admissionregistration.k8s.io/v1',
    ' kind: ValidatingWebhookConfiguration',
    ' metadata:',
    '   managedFields:',
    ...entry,
    '   name: metallb-webhook-configuration',
    ' webhooks:',
    ' - clientConfig:',
    ...(o.caBundleAdded ? ['+    caBundle: Zm9v'] : []),
    '     service:',
    '       name: metallb-webhook-service',
    ...(o.pathChanged ? ['-      path: /old', '+      path: /new'] : ['       path: /new']),
    '   name: a.metallb.io',
  ]);
}

describe('appliedChange: only the fields racksmith applies decide', () => {
  it('a Secret racksmith applies no field of, filled by the controller meanwhile: no change', () => {
    expect(appliedChange(secretFilledMeanwhile, M)).toBeUndefined();
  });

  it("a caBundle the controller wrote meanwhile: no change; racksmith's own field changed: a change, shown without managedFields", () => {
    expect(appliedChange(webhookDiff({ caBundleAdded: true, pathChanged: false }), M)).toBeUndefined();
    const shown = appliedChange(webhookDiff({ caBundleAdded: true, pathChanged: true }), M)!;
    expect(shown).toContain('-      path: /old\n+      path: /new');
    expect(shown).not.toContain('managedFields');
    expect(shown).not.toContain('f:path');
  });

  it('a field racksmith applied before and no longer applies, removed by the apply: a change', () => {
    const d = body([
      ' apiVersion: v1',
      ' data:',
      '   a: "1"',
      '-  b: "2"',
      ' kind: ConfigMap',
      ' metadata:',
      '   managedFields:',
      '   - apiVersion: v1',
      '     fieldsType: FieldsV1',
      '     fieldsV1:',
      '       f:data:',
      '         f:a: {}',
      '-        f:b: {}',
      '     manager: racksmith',
      '     operation: Apply',
      '   name: c',
    ]);
    expect(appliedChange(d, M)).toContain('-  b: "2"');
  });

  it('text that does not parse is a change, never a silent "same"', () => {
    expect(appliedChange(body([' a: [', '-b: 1', '+b: 2']), M)).toContain('-b: 1');
  });
});

describe('the diff shown', () => {
  it('managedFields left out on both sides, three lines of context, separate hunks with their line numbers', () => {
    const lines = [
      ' a: 1',
      ' metadata:',
      '   managedFields:',
      '-  - manager: x',
      '+  - manager: y',
      '     operation: Apply',
      '   name: n',
      ...Array.from({ length: 10 }, (_, i) => ` k${i}: ${i}`),
      '-z: 1',
      '+z: 2',
    ];
    const shown = unifiedHunks(withoutManagedFields(diffLines(body(lines))));
    expect(shown).toBe(['@@ -11,4 +11,4 @@', ' k7: 7', ' k8: 8', ' k9: 9', '-z: 1', '+z: 2'].join('\n'));
    expect(unifiedHunks(diffLines(body([' a: 1', ' b: 2'])))).toBe('');
  });
});
