# Host patterns as ansible-core itself selects hosts (the reference of host-pattern-differential):
# InventoryManager.get_hosts(pattern) after subset(limit), as ansible-playbook does for a play's
# `hosts` within -l. Input (stdin): JSON [{"sources": [...], "queries": [{"pattern": P,
# "limit": L or null}]}]; output: one list per job of {"hosts": [...], "warnings": [...]} or
# {"error": "..."}.
#
# Group.get_hosts walks the groups two or more levels below a group through a Python set of
# Group objects (hashed by id, so the order changes from run to run). Here that walk visits each
# level in the order its groups were found: one of the orders the set can give, and the one
# racksmith documents, so that the two can be compared host by host.
import json
import sys
from itertools import chain

from ansible.inventory.group import Group
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.utils.display import Display


def walk_in_order(self, rel, include_self=False, preserve_ordering=False):
    seen = []
    unprocessed = ([self] if include_self else []) + list(getattr(self, rel))
    unprocessed = list(dict.fromkeys(unprocessed))
    ordered = list(unprocessed)
    while unprocessed:
        seen.extend(g for g in unprocessed if g not in seen)
        new = []
        for item in chain.from_iterable(getattr(g, rel) for g in unprocessed):
            if item not in seen and item not in new:
                new.append(item)
                ordered.append(item)
        unprocessed = new
    return ordered if preserve_ordering else set(seen)


Group._walk_relationship = walk_in_order

warnings = []
Display.warning = lambda self, msg, formatted=False: warnings.append(msg)

out = []
for job in json.load(sys.stdin):
    loader = DataLoader()
    inv = InventoryManager(loader=loader, sources=job['sources'])
    answers = []
    for q in job['queries']:
        inv.clear_caches()
        inv.subset(None)
        del warnings[:]
        try:
            inv.subset(q.get('limit'))
            hosts = [h.name for h in inv.get_hosts(q['pattern'])]
            answers.append({'hosts': hosts, 'warnings': list(warnings)})
        except Exception as e:  # noqa: BLE001 - every failure is an answer
            answers.append({'error': '%s: %s' % (type(e).__name__, e)})
    out.append(answers)
print(json.dumps(out))
