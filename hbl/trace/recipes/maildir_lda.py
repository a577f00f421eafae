"""The maildir-lda recipe (`hbl workloads capture maildir-lda`): a mail store's deliveries, reads and deletions.

Dovecot's local delivery agent writes each message to a new file of the recipient's Maildir,
syncs it, renames it into new/ and appends to the mailbox's index log and uid list, synced too
(mail_fsync = always: a message is on disk before delivery is acknowledged). Mail users read
their new messages (doveadm fetch: the message files and the index), mark them seen (a rename
into cur/) and now and then delete what they have read (expunge: files unlinked, the index
rewritten). The disk sees small files written once and synced, read back later or never, and
deleted: a churn of short-lived data that no other capture has. Recipients and readers are
chosen by a power law over 2,000 mailboxes, message sizes by a log-normal law (median about
6 KiB, a few of hundreds of KiB).
"""
import os

from hbl.trace.recipes.base import Recipe

PY = "/usr/bin/python3"
LDA = "/usr/lib/dovecot/dovecot-lda"
DOVEADM = "/usr/bin/doveadm"
USERS = 2000

#: Dovecot's settings: Maildir under each mailbox's home, every write synced, files owned by Debian's mail user
CONF = """mail_location = maildir:~/Maildir
mail_fsync = always
mail_uid = mail
mail_gid = mail
first_valid_uid = 8
first_valid_gid = 8
protocols =
log_path = /dev/null
ssl = no
"""

#: the messages delivered (not on the captured file system): argv: directory, count
MESSAGES = r'''import base64, os, random, sys
out, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(0)
for i in range(n):
    size = min(int(rnd.lognormvariate(8.7, 1.2)), 400_000)
    body = base64.encodebytes(rnd.randbytes(size * 3 // 4)).decode()
    with open(os.path.join(out, "%04d.eml" % i), "w") as f:
        f.write("From: sender%d@example.org\nTo: user@example.net\nSubject: message %d\nMessage-ID: <%d@hbl>\n"
                "MIME-Version: 1.0\nContent-Type: text/plain\n\n%s" % (i % 97, i, i, body))
'''

#: one process of the mix, as the mail user: a deliverer (dovecot-lda) or a reader (doveadm fetch, flags,
#: expunge); argv: role, root of the mailboxes, configuration, messages directory, users, random seed and, for
#: a bounded run, rounds (-1: until stopped).  Its first line names the binaries it runs: those the recipe checks
MIX = "LDA, DOVEADM = %r, %r\n" % (LDA, DOVEADM) + r'''import os, pwd, random, subprocess, sys
role, root, conf, msgs, users, seed = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
rounds = int(sys.argv[7]) if len(sys.argv) > 7 else -1
if os.getuid() == 0:
    pw = pwd.getpwnam("mail")
    os.setgid(pw.pw_gid)
    os.setuid(pw.pw_uid)
rnd = random.Random(seed)
files = sorted(os.listdir(msgs))


def user():
    """A mailbox by a power law: the first of 2,000 gets about 1 in 40 of the mail, half go to the first 250."""
    return "u%04d" % min(int(users * rnd.random() ** 3), users - 1)


def run(u, argv, stdin=None):
    env = dict(os.environ, HOME=os.path.join(root, u), USER=u)
    subprocess.run(argv, stdin=stdin, env=env, check=True, stdout=subprocess.DEVNULL)


while rounds:
    rounds -= 1
    u = user()
    if role == "deliver":
        with open(os.path.join(msgs, rnd.choice(files))) as f:
            run(u, [LDA, "-c", conf, "-f", "sender@example.org"], stdin=f)
    else:
        if not os.path.isdir(os.path.join(root, u, "Maildir")):
            continue
        run(u, [DOVEADM, "-c", conf, "fetch", "text", "mailbox", "INBOX", "unseen"])
        run(u, [DOVEADM, "-c", conf, "flags", "add", "\\Seen", "mailbox", "INBOX", "unseen"])
        if rnd.random() < 0.3:
            run(u, [DOVEADM, "-c", conf, "expunge", "mailbox", "INBOX", "seen"])
'''

#: the step: four deliverers and two readers until the capture stops them (Recipe.together)
ROUNDS = r"""for i in 1 2 3 4; do {py} {mix} deliver {root} {conf} {msgs} {users} $i & done
for i in 11 12; do {py} {mix} read {root} {conf} {msgs} {users} $i & done
"""


class MaildirLda(Recipe):
    name, application, package = "maildir-lda", "Dovecot (dovecot-lda, doveadm)", "dovecot-core"
    runs = ("Dovecot's delivery agent writing messages (400 of log-normal sizes, median about 6 KiB) to 2,000 "
            "Maildir mailboxes chosen by a power law, every write synced (mail_fsync = always), 4 deliverers; "
            "2 readers by the same law fetching a mailbox's unseen messages, marking them seen and, 3 times in 10, "
            "expunging the seen ones (doveadm)")
    expected = ("0.7 M records in 15 minutes here (0.8 k/s at load 8-12: a process and several syncs a "
                "delivery); --duration 25m for 1 M")
    cache_bound = "memory cgroup of 128 MiB around the deliverers and readers"
    memory_mib = 128
    fs_gib = 8
    binaries = ((PY, "python3"), (LDA, "dovecot-core"), (DOVEADM, "dovecot-core"))

    def prepare(self, sc):
        sc.mkdir("mail", "mail")
        msgs = os.path.join(sc.tmp, "messages")     # beside the scratch file system: reading them is not captured
        os.mkdir(msgs)
        os.chmod(msgs, 0o755)                       # whatever the umask: the mail user reads them
        sc.run([PY, sc.write_tmp("maildir-messages.py", MESSAGES), msgs, "400"])
        for f in os.listdir(msgs):
            os.chmod(os.path.join(msgs, f), 0o644)

    def steps(self, sc):
        mix = sc.write_tmp("maildir-mix.py", MIX)
        script = ROUNDS.format(py=PY, mix=mix, root=sc.path("mail"), conf=sc.write_tmp("dovecot.conf", CONF),
                               msgs=os.path.join(sc.tmp, "messages"), users=USERS)
        return [self.together(sc, "mail", script, 1.0)]
