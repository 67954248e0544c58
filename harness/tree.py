#!/usr/bin/env python3
"""Compose the kernel source tree from the Debian base, our new files and
the patch series, and turn edits made inside that tree back into the repo.

  tree.py tree     extract the base (once), copy the new files in, apply
                   patches/series with zero fuzz; rewrite only files whose
                   content changes, so kbuild rebuilds little
  tree.py check    apply the series to a pristine copy of the files it
                   touches, report fuzz or rejects, touch nothing
  tree.py refresh  turn edits made inside the tree into patches/ and new
                   files at their kernel paths
  tree.py rediff   re-diff each patch against the tree the patches before
                   it leave (after hunks were moved between patches by hand)

The tree is a git repository whose commit tagged 'base' is the untouched
Debian source, so 'git diff base' inside it shows everything we changed.
build/src/managed.json remembers what `tree` wrote, so that an edit made
in the tree is never overwritten silently: `tree` refuses, and says to run
`refresh` first (or FORCE=1 to throw the edit away).
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.abspath(os.environ.get("BUILD", os.path.join(REPO, "build")))
SRC = os.path.join(BUILD, "src", "linux")
MANAGED = os.path.join(BUILD, "src", "managed.json")
# The line of the series to compose: a folder holding BASE, patches/ and
# the new files at their kernel paths (the repository's root for the
# mainline series, 6.12/ for its backport).
SERIES_DIR = os.path.abspath(os.environ.get("SERIES_DIR", REPO))
PATCHES = os.path.join(SERIES_DIR, "patches")
SERIES = os.path.join(PATCHES, "series")
# The base's tarball: TARBALL, or the one its package (BASE) installs.
TARBALL = os.environ.get("TARBALL")

# Untracked files in the tree that are never ours to export.
JUNK = re.compile(r"(\.orig|\.rej|~|\.swp|\.o|\.cmd|\.d)$|(^|/)\.#|"
                  r"(^|/)\.checkpatch-camelcase\.")


def die(msg):
    print(f"tree: {msg}", file=sys.stderr)
    sys.exit(1)


def git(*args, inp=None, check=True):
    r = subprocess.run(["git", "-C", SRC, *args], input=inp,
                       capture_output=True, check=False)
    if check and r.returncode:
        die(f"git {' '.join(args)}: {r.stderr.decode(errors='replace')}")
    return r.stdout


def blob_sha(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def read_base():
    """BASE holds 'key: value' lines: package, version, sha256."""
    base = {}
    with open(os.path.join(SERIES_DIR, "BASE")) as f:
        for line in f:
            if ":" in line and not line.startswith("#"):
                k, v = line.split(":", 1)
                base[k.strip()] = v.strip()
    return base


def installed_version(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg],
                       capture_output=True, text=True, check=False)
    return r.stdout.strip() if r.returncode == 0 else None


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_base(base):
    """Check that the base package is installed; return its tarball's
    sha256.  Another version than BASE's is not an error by itself (a
    suite keeps only its newest version): the series is tried on it, and
    BASE_FOUND tells apply_series() what to say if it does not apply."""
    global TARBALL, BASE_FOUND
    ver = installed_version(base["package"])
    if ver is None:
        die(f"{base['package']} is not installed (run `make deps`)")
    if TARBALL is None:
        TARBALL = f"/usr/src/{base['package']}.tar.xz"
    if not os.path.exists(TARBALL):
        die(f"{base['package']} {ver} is installed but {TARBALL} is missing")
    if ver != base["version"]:
        BASE_FOUND = ver
        print(f"tree: NOTE: found {base['package']} {ver}; the series was "
              f"made against {base['version']} (BASE): trying it on {ver}",
              file=sys.stderr)
    return sha256_file(TARBALL)


BASE_FOUND = None


def extract(tar_sha):
    """Unpack the tarball into SRC and commit it as tag 'base'."""
    tmp = SRC + ".new"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    print(f"tree: extracting {TARBALL} (about a minute)")
    subprocess.run(["tar", "xJf", TARBALL, "-C", tmp,
                    "--strip-components=1"], check=True)
    env = dict(os.environ, GIT_AUTHOR_NAME="base", GIT_COMMITTER_NAME="base",
               GIT_AUTHOR_EMAIL="base@localhost",
               GIT_COMMITTER_EMAIL="base@localhost")
    # Debian's top-level .gitignore ignores everything: add with -f.
    for cmd in (["init", "-q"], ["add", "-f", "-A"],
                ["commit", "-q", "-m", f"base {tar_sha}"], ["tag", "base"]):
        subprocess.run(["git", "-C", tmp, *cmd], env=env, check=True)
    shutil.rmtree(SRC, ignore_errors=True)
    os.rename(tmp, SRC)
    save_managed({"tarball": tar_sha, "files": {}})


def load_managed():
    try:
        with open(MANAGED) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def save_managed(m):
    tmp = MANAGED + ".tmp"
    with open(tmp, "w") as f:
        json.dump(m, f, indent=1, sort_keys=True)
    os.replace(tmp, MANAGED)


def base_blobs():
    """path -> blob sha of the base commit."""
    out = git("ls-tree", "-r", "-z", "base").split(b"\0")
    blobs = {}
    for ent in out:
        if ent:
            meta, path = ent.split(b"\t", 1)
            blobs[path.decode()] = meta.split()[2].decode()
    return blobs


def base_content(path):
    return git("cat-file", "blob", f"base:{path}")


def overlay_roots(blobs):
    """Top-level repo directories that are also kernel top-level dirs."""
    tops = {p.split("/", 1)[0] for p in blobs if "/" in p}
    return sorted(d for d in os.listdir(SERIES_DIR)
                  if d in tops and os.path.isdir(os.path.join(SERIES_DIR, d)))


def patch_root(patch):
    """The folder whose new files a patch of the series introduces: the
    series' own, or, for a patch another line shares (named by a path
    such as ../../patches/NAME in the backport's series), that line's."""
    return os.path.dirname(os.path.dirname(
        os.path.abspath(os.path.join(PATCHES, patch))))


def file_root(patch, line):
    """(kernel path, folder holding it) of a new file listed under a patch.

    A plain path is in the patch's folder (patch_root()); a path that
    starts with ../ names a file of the line that folder's parent holds,
    as a backport's own patch introduces a file mainline's introduces too:
    ../tools/x.c under a patch of 6.12/ is the root's tools/x.c.
    """
    root = patch_root(patch)
    while line.startswith("../"):
        root = os.path.dirname(root)
        line = line[3:]
    return line, root


def shared_files():
    """path -> folder, for the new files the series takes from another
    line's folder."""
    out = {}
    for patch, new in read_series_files(raw=True):
        for line in new:
            path, root = file_root(patch, line)
            if root != SERIES_DIR:
                out[path] = root
    return out


def new_files(blobs):
    """path -> (content, mode) for every file at a kernel path in the repo:
    the series' folder's own, and those the shared patches introduce."""
    files = {}
    for path, root in shared_files().items():
        full = os.path.join(root, path)
        if not os.path.exists(full):
            die(f"patches/series: {path} is not in {os.path.relpath(root, REPO) or '.'}/")
        with open(full, "rb") as f:
            files[path] = (f.read(), os.stat(full).st_mode & 0o777)
    for root in overlay_roots(blobs):
        for dirpath, dirnames, filenames in os.walk(os.path.join(SERIES_DIR, root)):
            dirnames.sort()
            for name in filenames:
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, SERIES_DIR)
                if JUNK.search(rel):
                    continue
                if rel in blobs:
                    die(f"{rel} exists upstream: change it with a patch "
                        "in patches/, not a copy")
                if rel in files:
                    die(f"{rel} is both in {os.path.relpath(SERIES_DIR, REPO)}/ "
                        "and introduced by a shared patch")
                with open(full, "rb") as f:
                    files[rel] = (f.read(), os.stat(full).st_mode & 0o777)
    return files


def read_series_files(raw=False):
    """[(patch, [new files it introduces])] from patches/series; the files
    as kernel paths, or with raw as the series lists them (file_root()).

    A line names a patch; the indented lines under it name the new files
    (kept in the repo at their kernel paths) that the patch introduces.
    """
    if not os.path.exists(SERIES):
        return []
    entries = []
    with open(SERIES) as f:
        for line in f:
            indented = line[:1].isspace()
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if indented:
                if not entries:
                    die(f"patches/series: {line} is under no patch")
                entries[-1][1].append(line)
                continue
            if not os.path.exists(os.path.join(PATCHES, line)):
                die(f"patches/series names {line}, which does not exist")
            entries.append((line, []))
    if not raw:
        entries = [(p, [file_root(p, f)[0] for f in new])
                   for p, new in entries]
    return entries


def read_series():
    return [p for p, _ in read_series_files()]


def check_introduced(files):
    """Every new file is introduced by exactly one patch of the series."""
    seen = {}
    for patch, new in read_series_files():
        for path in new:
            if path in seen:
                die(f"patches/series: {path} is introduced by both "
                    f"{seen[path]} and {patch}")
            if path not in files:
                die(f"patches/series: {patch} introduces {path}, which is "
                    "not in the repo")
            seen[path] = patch
    lost = sorted(set(files) - set(seen))
    if lost:
        for path in lost:
            print(f"tree: {path} is introduced by no patch", file=sys.stderr)
        die("list each new file in patches/series, indented under the "
            "first patch that needs it")


def patch_files(patch):
    """Files a patch touches, in order (from its +++/--- lines)."""
    files = []
    with open(os.path.join(PATCHES, patch), errors="replace") as f:
        old = None
        for line in f:
            if line.startswith("--- "):
                old = line[4:].split("\t")[0].strip()
            elif line.startswith("+++ ") and old is not None:
                new = line[4:].split("\t")[0].strip()
                path = new if new != "/dev/null" else old
                path = path.split("/", 1)[1]
                if path not in files:
                    files.append(path)
                old = None
    return files


def apply_series(blobs, series, snapshots=False):
    """Apply the series to pristine copies of the files it touches.

    Returns {path: content or None (deleted)} after the whole series and,
    with snapshots, a list of such dicts after each patch.
    """
    touched = []
    for p in series:
        touched += [f for f in patch_files(p) if f not in touched]
    states = []
    with tempfile.TemporaryDirectory(prefix="tree-") as stage:
        for path in touched:
            if path in blobs:
                dst = os.path.join(stage, path)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                with open(dst, "wb") as f:
                    f.write(base_content(path))
        for p in series:
            if not patch_files(p):
                # Only new files (listed under it in the series)
                if snapshots:
                    states.append(read_stage(stage, touched))
                continue
            r = subprocess.run(
                ["patch", "-p1", "--fuzz=0", "-N", "-t", "-r", "-",
                 "--no-backup-if-mismatch", "-d", stage,
                 "-i", os.path.join(PATCHES, p)],
                capture_output=True, text=True, check=False)
            if r.returncode or re.search(r"with fuzz", r.stdout):
                cur = "?"
                for line in r.stdout.splitlines():
                    m = re.match(r"patching file (\S+)", line)
                    if m:
                        cur = m.group(1)
                    elif "FAILED" in line or "fuzz" in line or \
                            "malformed" in line or "Reversed" in line:
                        print(f"tree: patches/{p}: {cur}: {line}",
                              file=sys.stderr)
                if BASE_FOUND:
                    base = read_base()
                    die(f"patches/{p} does not apply with zero fuzz to "
                        f"{base['package']} {BASE_FOUND} (see above): the "
                        f"series is made against {base['version']}; "
                        "rebase it (make refresh) and update BASE")
                die(f"patches/{p} does not apply with zero fuzz "
                    "(see above)")
            if snapshots:
                states.append(read_stage(stage, touched))
        final = read_stage(stage, touched)
    return final, states


def read_stage(stage, touched):
    out = {}
    for path in touched:
        full = os.path.join(stage, path)
        if os.path.exists(full):
            with open(full, "rb") as f:
                out[path] = f.read()
        else:
            out[path] = None
    return out


def desired_state(blobs, series):
    """path -> (content or None, mode or None) for every file we manage."""
    files = new_files(blobs)
    check_introduced(files)
    want = {p: (c, m) for p, (c, m) in files.items()}
    patched, _ = apply_series(blobs, series)
    for path, content in patched.items():
        if path in want:
            die(f"{path} is both a new file and patched by the series")
        want[path] = (content, None)
    return want


def tree_sha(path):
    full = os.path.join(SRC, path)
    try:
        with open(full, "rb") as f:
            return blob_sha(f.read())
    except FileNotFoundError:
        return None


def cmd_tree():
    base = read_base()
    tar_sha = check_base(base)
    if tar_sha != base.get("sha256"):
        print(f"tree: WARNING: {TARBALL} sha256 {tar_sha} differs from "
              f"BASE ({base.get('sha256')})", file=sys.stderr)
    managed = load_managed()
    if managed is None or managed.get("tarball") != tar_sha or \
            not os.path.isdir(os.path.join(SRC, ".git")):
        if managed and managed["files"] and os.path.isdir(SRC) and \
                not os.environ.get("FORCE"):
            edited = [p for p, s in managed["files"].items()
                      if tree_sha(p) != s]
            if edited:
                die("the tarball changed but the tree has edits: run "
                    "`make refresh` or FORCE=1 `make tree`")
        extract(tar_sha)
        managed = load_managed()

    blobs = base_blobs()
    series = read_series()
    want = desired_state(blobs, series)
    force = bool(os.environ.get("FORCE"))
    old = managed["files"]
    plan = []
    conflicts = []
    for path in sorted(set(want) | set(old)):
        content, mode = want.get(path, (None, None))
        if path not in want:
            # No longer ours: back to the base (or gone).
            content = base_content(path) if path in blobs else None
        target = blob_sha(content) if content is not None else None
        actual = tree_sha(path)
        full = os.path.join(SRC, path)
        mode_ok = mode is None or not os.path.exists(full) or \
            (os.stat(full).st_mode & 0o777) == mode
        if actual == target and mode_ok:
            continue
        expected = old.get(path, blobs.get(path))
        if actual != expected and actual != target and not force:
            conflicts.append(path)
            continue
        plan.append((path, content, mode))
    if conflicts:
        for p in conflicts:
            print(f"tree: {p} was edited inside the tree", file=sys.stderr)
        die("run `make refresh` to keep those edits, or FORCE=1 "
            "`make tree` to discard them")
    for path, content, mode in plan:
        full = os.path.join(SRC, path)
        if content is None:
            if os.path.exists(full):
                os.unlink(full)
            print(f"tree: removed {path}")
            continue
        os.makedirs(os.path.dirname(full), exist_ok=True)
        tmp = full + ".tree-tmp"
        with open(tmp, "wb") as f:
            f.write(content)
        if mode is not None:
            os.chmod(tmp, mode)
        elif os.path.exists(full):
            os.chmod(tmp, os.stat(full).st_mode & 0o777)
        os.replace(tmp, full)
        print(f"tree: wrote {path}")
    managed["files"] = {p: blob_sha(c) if c is not None else None
                        for p, (c, _) in want.items()}
    save_managed(managed)
    print(f"tree: {len(series)} patches applied with zero fuzz, "
          f"{len(want)} files managed, {len(plan)} rewritten")


def cmd_check():
    if not os.path.isdir(os.path.join(SRC, ".git")):
        die("no tree yet: run `make tree`")
    blobs = base_blobs()
    series = read_series()
    apply_series(blobs, series)
    for p in series:
        print(f"ok patches/{p}")
    print(f"tree: all {len(series)} patches apply to the base with zero fuzz")


def unified(path, old, new):
    """A git-style diff of one file, old/new None for create/delete."""
    with tempfile.TemporaryDirectory(prefix="refresh-") as d:
        a, b = os.path.join(d, "a"), os.path.join(d, "b")
        with open(a, "wb") as f:
            f.write(old or b"")
        with open(b, "wb") as f:
            f.write(new or b"")
        r = subprocess.run(
            ["diff", "-u", "-p",
             "--label", "/dev/null" if old is None else f"a/{path}",
             "--label", "/dev/null" if new is None else f"b/{path}", a, b],
            capture_output=True, check=False)
    if r.returncode > 1:
        die(f"diff failed on {path}")
    if not r.stdout:
        return ""
    head = f"diff --git a/{path} b/{path}\n"
    if old is None:
        head += "new file mode 100644\n"
    elif new is None:
        head += "deleted file mode 100644\n"
    return head + r.stdout.decode()


def split_patch(text):
    """(header, {path: section}) of a patch file."""
    parts = re.split(r"^(?=diff --git )", text, flags=re.M)
    header, sections = parts[0], {}
    for sec in parts[1:]:
        m = re.match(r"diff --git a/(\S+) b/(\S+)", sec)
        sections[m.group(2)] = sec
    return header, sections


def write_patch(name, header, sections):
    body = "".join(sections[p] for p in sorted(sections))
    if not header.endswith("\n"):
        header += "\n"
    with open(os.path.join(PATCHES, name), "w") as f:
        f.write(header + body)


def cmd_refresh():
    if not os.path.isdir(os.path.join(SRC, ".git")):
        die("no tree yet: run `make tree`")
    managed = load_managed() or {"files": {}}
    blobs = base_blobs()
    series = read_series()
    _, states = apply_series(blobs, series, snapshots=True)
    owners = {}
    for i, p in enumerate(series):
        for f in patch_files(p):
            owners.setdefault(f, []).append(i)

    changed = git("diff", "--name-only", "-z", "base").decode().split("\0")
    changed += [p for p in git("ls-files", "--others", "-z").decode()
                .split("\0") if p and not JUNK.search(p)]
    changed = sorted({p for p in changed if p})

    repo_new = new_files(blobs)
    shared = shared_files()
    edits = {}  # patch index -> {path: section}
    stray = {}
    updated = 0
    for path in changed:
        if managed["files"].get(path) == tree_sha(path):
            continue  # exactly what `tree` wrote: not an edit
        full = os.path.join(SRC, path)
        content = None
        if os.path.exists(full):
            with open(full, "rb") as f:
                content = f.read()
        if path in owners:
            # The last patch touching the file takes the edit, as a diff
            # against the file as the patches before it leave it.
            last = owners[path][-1]
            if last:
                before = states[last - 1][path]
            else:
                before = base_content(path) if path in blobs else None
            edits.setdefault(last, {})[path] = unified(path, before, content)
        elif path in blobs:
            stray[path] = unified(path, base_content(path), content)
        else:
            # A new file: it lives in the repo at its kernel path.
            dst = os.path.join(shared.get(path, SERIES_DIR), path)
            if content is None:
                if os.path.exists(dst):
                    os.unlink(dst)
                print(f"refresh: removed {path}")
            else:
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                with open(dst, "wb") as f:
                    f.write(content)
                os.chmod(dst, os.stat(full).st_mode & 0o777)
                print(f"refresh: {path}")
                if path not in repo_new:
                    print(f"refresh: {path} is new: list it in "
                          "patches/series under the patch that needs it")
            updated += 1
    for path in repo_new:
        if path not in changed and not os.path.exists(os.path.join(SRC, path)):
            print(f"refresh: {path} is in the repo but not in the tree "
                  "(left alone; run `make tree`)")
    for idx, secs in sorted(edits.items()):
        name = series[idx]
        with open(os.path.join(PATCHES, name)) as f:
            header, sections = split_patch(f.read())
        for path, sec in secs.items():
            if sec:
                sections[path] = sec
            else:
                sections.pop(path, None)
        write_patch(name, header, sections)
        print(f"refresh: patches/{name} ({', '.join(sorted(secs))})")
        updated += 1
    if stray:
        num = len(series) + 1
        name = f"{num:04d}-unsorted-edits.patch"
        header = ("From: " + git_ident() + "\n"
                  "Subject: [PATCH] UNSORTED: edits to upstream files not yet "
                  "in any patch\n\nMove these hunks into the patch they "
                  "belong to, or give this patch\na real subject and "
                  "message.\n\nSigned-off-by: " + git_ident() + "\n---\n")
        write_patch(name, header, stray)
        with open(SERIES, "a") as f:
            f.write(name + "\n")
        print(f"refresh: new patches/{name} for {', '.join(sorted(stray))}:"
              " give it a subject and message, or move its hunks")
        updated += 1
    print(f"refresh: {updated} repo files updated")


def cmd_rediff():
    """Re-diff every patch against the tree as the patches before it leave
    it: after a hunk was moved between patches by hand, no hunk applies at
    an offset and every header is exact.  The composed tree is unchanged."""
    blobs = base_blobs()
    series = read_series()
    _, states = apply_series(blobs, series, snapshots=True)
    changed = 0
    for i, name in enumerate(series):
        path_ = os.path.join(PATCHES, name)
        with open(path_) as f:
            text = f.read()
        header, sections = split_patch(text)
        for path in sections:
            if i:
                before = states[i - 1][path]
            else:
                before = base_content(path) if path in blobs else None
            sections[path] = unified(path, before, states[i][path])
        body = "".join(sections[p] for p in sorted(sections))
        if not header.endswith("\n"):
            header += "\n"
        if header + body != text:
            with open(path_, "w") as f:
                f.write(header + body)
            print(f"rediff: patches/{name}")
            changed += 1
    print(f"rediff: {changed} of {len(series)} patches rewritten")


def git_ident():
    r = subprocess.run(["git", "-C", REPO, "var", "GIT_AUTHOR_IDENT"],
                       capture_output=True, text=True, check=False)
    return re.sub(r"\s+\d+ [+-]\d{4}$", "", r.stdout.strip()) or \
        "Unknown <unknown@localhost>"


def main():
    cmds = {"tree": cmd_tree, "check": cmd_check, "refresh": cmd_refresh,
            "rediff": cmd_rediff}
    if len(sys.argv) != 2 or sys.argv[1] not in cmds:
        die(f"usage: {sys.argv[0]} {{{'|'.join(cmds)}}}")
    cmds[sys.argv[1]]()


if __name__ == "__main__":
    main()
