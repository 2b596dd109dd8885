/** `provision --help`: every option of the table in src/cli/options.ts is named here (a unit test holds it). */
export const USAGE = `usage: provision [PLAYBOOK...] -i INVENTORY [options]
       provision apply PLAN [--max-plan-age 24h] [options]
       provision inventory -i INVENTORY (--list | --host HOST) [-e VARS] [vault options]
       provision exec PATTERN -i INVENTORY [-l LIMIT] [-b] [-f N] [-T S] [--host-timeout S] [--json] -- CMD [ARGS...]
                           one command on the pattern's hosts; several words are quoted one by one,
                           a single word is a shell command line (sh -c); hosts with the same output
                           and exit status are printed once; exit 0 only if every host exited 0
       provision plan show PLAN [--json] [--html OUT]   (the reviewed changes, grouped, with diffs)
       provision runs [--json] [--host H] [--label K=V] [--since D] [--failed]   (run history, newest first)
       provision runs show ID [--json] [--html OUT] | runs prune (--keep N | --older-than D)

  -i, --inventory PATH     Ansible inventory: YAML, INI or JSON file, or a directory of them
                           (group_vars/ and host_vars/ beside it); repeatable, merged in order
      --list-hosts         print the hosts the run would reach (after -l), run nothing
      --list-tasks         print each host's resources (built and checked), connect to nothing
      --list-tags          print the tags of each play's resources (built and checked), connect to nothing
      --syntax-check       load and check the playbooks, inventory and every resource; connect to nothing
      --vault-password-file FILE, --vault-id [LABEL@]FILE|prompt, --ask-vault-pass
                           passwords for !vault values and vault-encrypted files
  -C, --check              dry run: probe and diff, change nothing (exit 2 if changes are pending)
  -D, --diff               show file diffs and before → after values
  -l, --limit PATTERN      host pattern: host, group, glob, ~regex, !exclude, &intersect
  -t, --tags LIST          only resources with these tags (comma-separated; repeatable)
      --skip-tags LIST     skip resources with these tags (repeatable; all: all but always)
  -f, --forks N            hosts in flight at once (default 50)
  -e, --extra-vars VARS    key=value, @file.yaml or a {YAML/JSON mapping}; wins over the inventory
      --serial LIST        rolling batches, e.g. 1,10%,25% (last size repeats)
      --max-fail-percent P end the run once more than P% of a play's hosts failed
      --known-hosts FILE   known_hosts file (default: racksmith_known_hosts var, the ssh config's
                           UserKnownHostsFile, or ~/.ssh/known_hosts)
      --ssh-accept-new     record unknown host keys instead of refusing (changed keys are always refused)
  -T, --timeout SECONDS    SSH connect timeout (default 10)
  -u, --user USER          login user where the inventory names none (ansible_user wins; it wins
                           over ~/.ssh/config's User)
      --private-key FILE   key file where the inventory names none (also --key-file)
  -k, --ask-pass           ask for the login password once (password authentication)
  -c, --connection ssh|local   where the inventory's ansible_connection says nothing
      --ssh-common-args ARGS, --ssh-extra-args ARGS
                           OpenSSH options where the inventory gives none: -o ProxyJump=, -J,
                           -o ProxyCommand='ssh -W %h:%p HOST', -o UserKnownHostsFile=,
                           -o StrictHostKeyChecking=, -o ConnectTimeout=, -o IdentitiesOnly=, -i, -p, -l
  -F, --ssh-config FILE    OpenSSH client config (default ~/.ssh/config; racksmith_ssh_config wins)
  -b, --become             run every host's script escalated, in one shell (sudo)
      --become-user USER   as this user (default root)
      --become-method M    sudo (default) or su
  -K, --ask-become-pass    ask for the become password once; fed to sudo on stdin
      --host-timeout SECS  give up on a host that takes longer than this, connecting included: its
                           remote commands are killed, its link dropped (it counts as unreachable)
      --ssh-keepalive SECS SSH keepalive interval (default 10; a link that misses 3 is dead; 0: off)
      --ssh-handshakes N   SSH handshakes at once (default 100); other hosts wait their turn, and
                           each host's connect timeout starts with its own turn
      --ssh-handshakes-per-sshd N
                           connections being made at once to one sshd (default 8: a bastion, a
                           drain controller; under OpenSSH's default MaxStartups 10)
      --lock-timeout SECS  wait this long for another run's apply lock on a host (default 300; 0: do not wait)
      --drain MODE         kubernetes, slurm or none (default: each host's racksmith_drain, else none):
                           drain a host before its first disruptive change, put it back after its last
      --drain-timeout SECS how long a drain may wait for the host's work to leave (default 600)
      --plan-out FILE      with --check: save the reviewed changes for \`provision apply FILE\`
      --plan-key FILE      sign plans and mask secrets with this team key (also RACKSMITH_PLAN_KEY)
                           instead of this installation's: plans then apply wherever the key is
      --yes                apply changes that destroy data (storage_wipe) without a reviewed plan
      --max-plan-age DUR   apply: refuse plans older than this (default 24h)
      --journal FILE       where to write the run journal (NDJSON; default under ~/.local/state/racksmith)
      --resume JOURNAL|ID  run only the hosts that failed, were unreachable or did not finish there;
                           a run id (provision runs) also takes that run's playbooks and options
      --label KEY=VALUE    recorded in the run's history, e.g. change=CHG-1234 (repeatable)
      --json               NDJSON events on stdout (the human view stays on stderr)
      --recap summary|full the recap: totals and the hosts not ok (default), or a row per host (full; also -v)
  -v, --verbose            more detail (repeat for more)
  -h, --help
      --version            racksmith's version, where it is installed, and Node's version

ansible.cfg (ANSIBLE_CONFIG, ./ansible.cfg, ~/.ansible.cfg, /etc/ansible/ansible.cfg) gives the
defaults of -i, -f, -u, --private-key, -T, -b, --become-user, --become-method, -K and vault options.
Playbook defaults to playbooks/site.ts. Exit codes: 0 converged or nothing to do, 1 a host failed
or was unreachable, 2 check mode found changes, 3 bad input (nothing was run on any host).`;
