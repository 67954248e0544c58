#!/usr/bin/env python3
"""Turn patches/ and the new files into the series a maintainer receives,
and check that it is one.

  export.py format-patch  one git commit per patch of patches/series on top
                          of the Debian base, each with the new files that
                          patches/series lists under it; then `git
                          format-patch` into build/export/ with the cover
                          letter of patches/cover-letter
  export.py am-check      `git am` the exported mails onto a pristine base
                          (a worktree in build/export/am) and compare the
                          result with the tree `make tree` composes
  export.py bisect        build each exported commit in turn (the kernel
                          where the commit touches it, perf where it touches
                          tools/, the perf_events selftests where it touches
                          them or the UAPI): every boundary must build

The commits live in the git repository of the composed tree
(build/src/linux), on the branch 'export'; its 'base' tag is the untouched
Debian source.  Nothing here changes the repo.
"""

import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tree  # noqa: E402

REPO = tree.REPO
BUILD = tree.BUILD
SRC = tree.SRC
OUT = os.path.join(BUILD, "export")
AM = os.path.join(OUT, "am")
COVER = os.path.join(tree.PATCHES, "cover-letter")
BRANCH = "export"
# Fixed dates make the export reproducible: the same patches give the same
# commits, so a later run shows what changed with `git diff`.
DATE = "2026-12-03T12:00:00+00:00"


def die(msg):
    print(f"export: {msg}", file=sys.stderr)
    sys.exit(1)


def git(*args, cwd=SRC, env=None, inp=None, check=True):
    r = subprocess.run(["git", "-C", cwd, *args], input=inp, env=env,
                       capture_output=True, check=False)
    if check and r.returncode:
        die(f"git {' '.join(args)}: "
            f"{(r.stderr or r.stdout).decode(errors='replace').strip()}")
    return r.stdout.decode(errors="replace")


def parse_header(name):
    """(author name, author email, subject, body) of a patch's header."""
    with open(os.path.join(tree.PATCHES, name)) as f:
        header, _ = tree.split_patch(f.read())
    m = re.search(r"^From: (.*?) <([^>]+)>$", header, re.M)
    if not m:
        die(f"patches/{name}: no From: line")
    author, email = m.group(1), m.group(2)
    m = re.search(r"^Subject: (?:\[PATCH[^\]]*\] )?(.*)$", header, re.M)
    if not m:
        die(f"patches/{name}: no Subject: line")
    subject = m.group(1).strip()
    rest = header[m.end():].lstrip("\n")
    body = re.split(r"^---\s*$", rest, maxsplit=1, flags=re.M)[0].strip()
    if not re.search(r"^Signed-off-by: ", body, re.M):
        die(f"patches/{name}: no Signed-off-by: line")
    return author, email, subject, body


def exporter():
    """(name, email) of the person who runs the export: git's user.name
    and user.email (of the repository, else global); None if unset."""
    ident = []
    for key in ("user.name", "user.email"):
        r = subprocess.run(["git", "-C", REPO, "config", key],
                           capture_output=True, text=True, check=False)
        ident.append(r.stdout.strip())
    return tuple(ident) if all(ident) else None


def sign(body, name, email):
    """The body with the exporter's Signed-off-by in place of the
    repository's."""
    body = re.sub(r"^Signed-off-by: .*\n?", "", body, flags=re.M).rstrip()
    return f"{body}\n\nSigned-off-by: {name} <{email}>"


def cmd_format_patch():
    if not os.path.isdir(os.path.join(SRC, ".git")):
        die("no tree yet: run `make tree`")
    me = exporter()
    if me is None:
        print("export: git has no user.name and user.email: the mails keep "
              "the repository's author; set them to sign the series "
              "yourself", file=sys.stderr)
    entries = tree.read_series_files()
    blobs = tree.base_blobs()
    files = tree.new_files(blobs)
    tree.check_introduced(files)
    with tempfile.TemporaryDirectory(prefix="export-") as tmp:
        env = dict(os.environ, GIT_INDEX_FILE=os.path.join(tmp, "index"))
        git("read-tree", "base", env=env)
        parent = git("rev-parse", "base^{commit}").strip()
        for i, (name, new) in enumerate(entries, 1):
            # A patch of new files only has no diff of its own
            r = subprocess.run(
                ["git", "-C", SRC, "apply", "--cached", "--whitespace=nowarn",
                 os.path.join(tree.PATCHES, name)],
                env=env, capture_output=True, text=True,
                check=False) if tree.patch_files(name) else None
            if r and r.returncode:
                die(f"patches/{name} does not apply: {r.stderr.strip()}")
            for path in new:
                content, mode = files[path]
                blob = git("hash-object", "-w", "--stdin",
                           inp=content).strip()
                gmode = "100755" if mode & 0o111 else "100644"
                git("update-index", "--add", "--cacheinfo",
                    f"{gmode},{blob},{path}", env=env)
            tree_id = git("write-tree", env=env).strip()
            author, email, subject, body = parse_header(name)
            if me:
                author, email = me
                body = sign(body, author, email)
            cenv = dict(os.environ, GIT_AUTHOR_NAME=author,
                        GIT_AUTHOR_EMAIL=email, GIT_COMMITTER_NAME=author,
                        GIT_COMMITTER_EMAIL=email, GIT_AUTHOR_DATE=DATE,
                        GIT_COMMITTER_DATE=DATE)
            parent = git("commit-tree", tree_id, "-p", parent,
                         inp=f"{subject}\n\n{body}\n".encode(),
                         env=cenv).strip()
    git("update-ref", f"refs/heads/{BRANCH}", parent)
    check_final(parent, blobs)

    for old in os.listdir(OUT) if os.path.isdir(OUT) else []:
        if old.endswith(".patch"):
            os.unlink(os.path.join(OUT, old))
    os.makedirs(OUT, exist_ok=True)
    git("format-patch", "-q", "--cover-letter", "--thread=shallow",
        "--no-signature", "-o", OUT, f"base..{BRANCH}")
    write_cover(len(entries))
    mails = sorted(f for f in os.listdir(OUT) if f.endswith(".patch"))
    print(f"export: {len(mails) - 1} patches and a cover letter in "
          f"{os.path.relpath(OUT, REPO)}/ (branch '{BRANCH}' of "
          f"{os.path.relpath(SRC, REPO)})")


def check_final(commit, blobs):
    """The last commit's tree is what `make tree` composes."""
    want = tree.desired_state(blobs, tree.read_series())
    got = {}
    for ent in git("ls-tree", "-r", "-z", commit).split("\0"):
        if ent:
            meta, path = ent.split("\t", 1)
            got[path] = meta.split()[2]
    bad = []
    for path, (content, _) in want.items():
        sha = tree.blob_sha(content) if content is not None else None
        if got.get(path) != sha:
            bad.append(path)
    for path, sha in got.items():
        if path not in want and blobs.get(path) != sha:
            bad.append(path)
    for path in blobs:
        if path not in got and path not in want:
            bad.append(path)
    if bad:
        for path in sorted(bad)[:20]:
            print(f"export: {path} differs from the composed tree",
                  file=sys.stderr)
        die(f"the exported series does not end at the composed tree "
            f"({len(bad)} files)")


def write_cover(n):
    """Put patches/cover-letter (subject line, blank line, text) into the
    cover letter git wrote, keeping its shortlog and diffstat."""
    path = os.path.join(OUT, "0000-cover-letter.patch")
    with open(path) as f:
        mail = f.read()
    if not os.path.exists(COVER):
        die("patches/cover-letter is missing")
    with open(COVER) as f:
        subject, _, text = f.read().partition("\n")
    text = text.strip("\n")
    if "*** SUBJECT HERE ***" not in mail or "*** BLURB HERE ***" not in mail:
        die("git format-patch wrote an unexpected cover letter")
    mail = mail.replace("*** SUBJECT HERE ***", subject.strip())
    mail = mail.replace("*** BLURB HERE ***", text)
    with open(path, "w") as f:
        f.write(mail)


def am_worktree(where=AM):
    """A worktree of the tree's repository at WHERE, on base."""
    if not os.path.exists(os.path.join(where, ".git")):
        os.makedirs(OUT, exist_ok=True)
        print("export: checking out the base in "
              f"{os.path.relpath(where, REPO)} (once, about a minute)")
        git("worktree", "prune")
        git("worktree", "add", "--detach", where, "base")
    git("am", "--abort", cwd=where, check=False)
    git("checkout", "-q", "--detach", "-f", "base", cwd=where)
    git("clean", "-q", "-fdx", cwd=where)


def cmd_am_check():
    mails = sorted(os.path.join(OUT, f) for f in os.listdir(OUT)
                   if f.endswith(".patch") and not f.startswith("0000-"))
    if not mails:
        die("nothing exported: run `make format-patch` first")
    am_worktree()
    env = dict(os.environ, GIT_COMMITTER_NAME="am-check",
               GIT_COMMITTER_EMAIL="am-check@localhost")
    r = subprocess.run(["git", "-C", AM, "am", "-q", "--whitespace=error",
                        *mails], env=env, capture_output=True, text=True,
                       check=False)
    if r.returncode:
        print(r.stdout + r.stderr, file=sys.stderr)
        die("git am failed (see above)")
    got = git("rev-parse", "HEAD^{tree}", cwd=AM).strip()
    want = git("rev-parse", f"{BRANCH}^{{tree}}").strip()
    if got != want:
        die(f"git am gave tree {got}, the export is {want}")
    n = int(git("rev-list", "--count", "base..HEAD", cwd=AM))
    print(f"export: git am applied all {n} mails to a pristine base; the "
          "result is the tree `make tree` composes")


# What a commit must rebuild, by the paths it touches.
PARTS = (
    ("kernel", re.compile(r"^(arch|block|certs|crypto|drivers|fs|include|"
                          r"init|io_uring|ipc|kernel|lib|mm|net|scripts|"
                          r"security|virt|Kconfig|Makefile)")),
    ("perf", re.compile(r"^tools/(perf|lib|include|build|scripts|arch)/")),
    ("selftests", re.compile(r"^(tools/testing/selftests/perf_events/|"
                             r"include/uapi/)")),
)


def run_logged(cmd, log, cwd=None):
    with open(log, "a") as f:
        r = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT,
                           check=False)
    if r.returncode:
        with open(log) as f:
            tail = f.readlines()[-30:]
        sys.stderr.write("".join(tail))
    return r.returncode == 0


def cmd_bisect():
    commits = git("rev-list", "--reverse", f"base..{BRANCH}").split()
    if not commits:
        die("nothing exported: run `make format-patch` first")
    parts_wanted = set(os.environ.get("BISECT_PARTS",
                                      "kernel,perf,selftests").split(","))
    first = int(os.environ.get("BISECT_FROM", "1"))
    obj = os.path.join(OUT, "bisect")
    kobj, pobj, sobj = (os.path.join(obj, d)
                        for d in ("kernel", "perf", "selftests"))
    for d in (kobj, pobj, sobj):
        os.makedirs(d, exist_ok=True)
    # A worktree of its own: am-check (make check) resets build/export/am
    src = os.path.join(obj, "src")
    am_worktree(src)
    jobs = str(os.cpu_count() or 2)
    cc = "ccache gcc" if subprocess.run(["sh", "-c", "command -v ccache"],
                                        capture_output=True).returncode == 0 \
        else "gcc"
    line = "mainline.config" if os.path.samefile(tree.SERIES_DIR, REPO) \
        else "6.12.config"
    frags = [os.path.join(REPO, "harness/config", f)
             for f in ("guest.config", "debug.config", line)]
    perf_flags = os.environ.get("PERF_FLAGS", "").split()
    results = []
    built = set()
    for i, c in enumerate(commits, 1):
        subject = git("log", "-1", "--format=%s", c)
        if i < first:
            continue
        touched = git("diff-tree", "--no-commit-id", "--name-only", "-r",
                      c).split()
        parts = [p for p, rx in PARTS if p in parts_wanted and
                 (p not in built or any(rx.search(t) for t in touched))]
        git("checkout", "-q", "--detach", "-f", c, cwd=src)
        t0 = time.time()
        ok = True
        for part in parts:
            log = os.path.join(obj, f"{i:04d}-{part}.log")
            if os.path.exists(log):
                os.unlink(log)
            if part == "kernel":
                ok = run_logged(["env", "KCONFIG_LENIENT=1", "sh",
                                 os.path.join(REPO, "harness", "kconfig.sh"),
                                 src, kobj, *frags], log) and \
                    run_logged(["make", "-s", "-C", src, f"O={kobj}",
                                f"CC={cc}", f"-j{jobs}", "bzImage",
                                "headers"], log)
            elif part == "perf":
                ok = run_logged(["make", "-s", "-C",
                                 os.path.join(src, "tools/perf"),
                                 f"O={pobj}", f"CC={cc}", f"-j{jobs}",
                                 *perf_flags], log)
            else:
                hdr = os.path.join(kobj, "usr/include")
                ok = run_logged(["make", "-s", "-C", os.path.join(
                    src, "tools/testing/selftests/perf_events"),
                    f"OUTPUT={sobj}", f"KHDR_INCLUDES=-isystem {hdr}",
                    f"-j{jobs}"], log)
            if not ok:
                results.append((i, subject, f"{part} FAILED "
                                f"({os.path.relpath(log, REPO)})"))
                break
            built.add(part)
        if ok:
            results.append((i, subject, ",".join(parts) or "nothing to build"))
        print(f"bisect: {i:04d} {'ok  ' if ok else 'FAIL'} "
              f"{results[-1][2]} ({time.time() - t0:.0f} s) {subject}",
              flush=True)
        if not ok:
            die(f"patch {i} does not build")
    print(f"bisect: every boundary from {first} to {len(commits)} builds")


def main():
    cmds = {"format-patch": cmd_format_patch, "am-check": cmd_am_check,
            "bisect": cmd_bisect}
    if len(sys.argv) != 2 or sys.argv[1] not in cmds:
        die(f"usage: {sys.argv[0]} {{{'|'.join(cmds)}}}")
    cmds[sys.argv[1]]()


if __name__ == "__main__":
    main()
