#!/bin/bash
# tests/run-all.sh -- the whole test suite, exactly as CI runs it.
#
# Usage: tests/run-all.sh [--no-packages | --packages-only]
#
#   packages: the Debian packages of tests/debian-packages.sh (the
#      quickstart's and the tests' own), checked with dpkg-query.  As root,
#      the missing ones are installed ("apt-get update", then "apt-get
#      install -y --no-install-recommends ..."); as another user the run
#      stops naming them.  --no-packages skips this; --packages-only stops
#      after it.
#   0. as root: build the Debian test image once (tests/image/), for every
#      build's tests/cli/test-image-debian.sh (BERTH_DEBIAN_LAYOUT)
#   1. ./autogen.sh && ./configure --enable-werror && make -j2 && make check,
#      make install DESTDIR=ci-destdir checked file by file
#      (tests/build/check-install.sh), make distcheck   (in this tree, as the caller),
#      and a build of the tarball with --disable-tests and Check hidden
#      (tests/build/test-without-check.sh)
#   2. when run as root: make distcheck again as an unprivileged user, from
#      the tarball step 1 produced (proves nothing needs root or touches
#      /etc or /var outside the prefix)
#   3. a second build from that tarball with AddressSanitizer,
#      UndefinedBehaviorSanitizer and berthd's fault injection, running make
#      check (the berthd crash tests run only here, and must pass here)
#   4. a clang build with --enable-fuzzing, running every libFuzzer target
#      for FUZZ_SECONDS seconds (default 60)
#   5. as root: the README's ./quickstart from that tarball, twice (into a
#      prefix and work directory under a new /var/tmp/berth-ci-quickstart.*,
#      removed afterwards): a real job in gVisor,
#      its receipt, result and audit chain verified; the second run proves
#      that running it again works
#
# Builds for steps 3-5 live under ./ci-build/ (removed first and kept
# afterwards for inspection), next to the dist tarball.  Step 2 creates the
# system user berth-ci if it does not exist, and removes it again.  The tree
# itself is left configured with --enable-werror.  Any failure stops the run
# with a non-zero exit status.
#
# Every suite must run here: BERTH_REQUIRE_TOOLS=1 makes a test that lacks
# a tool fail instead of skipping (tests/require-tool.sh), and as root a
# suite that skipped for any other reason fails the run too (but for the
# crash tests in a build without fault injection, which step 3 runs).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=${JOBS:-2}
step() { printf '\n=== %s\n' "$*"; }

packages=1
packages_only=0
for arg in "$@"; do
    case $arg in
    --no-packages) packages=0 ;;
    --packages-only) packages_only=1 ;;
    -h | --help)
        sed -n '2,/^set -euo pipefail$/{/^set -euo pipefail$/d;s/^# \{0,1\}//;p;}' "$0"
        exit 0
        ;;
    *)
        echo "tests/run-all.sh: unknown argument '$arg' (try --help)" >&2
        exit 2
        ;;
    esac
done

# shellcheck source=tests/debian-packages.sh
. tests/debian-packages.sh
if [ "$packages" = 1 ]; then
    # shellcheck disable=SC2086
    step "packages: $(echo $BERTH_BUILD_PACKAGES $BERTH_RUN_PACKAGES $BERTH_TEST_PACKAGES | wc -w) Debian packages"
    # shellcheck disable=SC2086
    missing=$(berth_missing_packages $BERTH_BUILD_PACKAGES $BERTH_RUN_PACKAGES $BERTH_TEST_PACKAGES) || {
        echo "tests/run-all.sh: dpkg-query not found: the tests need Debian 12 (or use --no-packages)" >&2
        exit 1
    }
    if [ -z "$missing" ]; then
        echo "all installed"
    elif [ "$(id -u)" = 0 ]; then
        echo "installing: $missing"
        # shellcheck disable=SC2086
        berth_install_packages $missing
    else
        echo "tests/run-all.sh: missing Debian packages: $missing" >&2
        echo "tests/run-all.sh: run it as root (it installs them), or: apt-get install $missing" >&2
        exit 1
    fi
fi
[ "$packages_only" = 0 ] || exit 0
export BERTH_REQUIRE_TOOLS=1

# no_skips BUILDDIR [TEST...]: fail, naming each and its reason, when a suite
# of the build in BUILDDIR was skipped, but for the TESTs named (as
# tests/cli/test-foo, relative to BUILDDIR).
no_skips() {
    local dir=$1 trs t bad=0
    shift
    while IFS= read -r trs; do
        grep -qx ':test-result: SKIP' "$trs" || continue
        t=${trs#"$dir"/}
        t=${t%.trs}
        case " $* " in *" $t "*) continue ;; esac
        echo "$t was skipped: $(grep -m1 'SKIP' "$dir/$t.log" || true)" >&2
        bad=1
    done < <(find "$dir/tests" -name '*.trs' | sort)
    return "$bad"
}

# show_failures DIR: print the log of every test under DIR that failed or
# errored (the last 300 lines of each), so that the end of this run's
# output, which is what CI shows, says which case failed and why.
show_failures() {
    local trs
    while IFS= read -r trs; do
        grep -qxE ':test-result: (FAIL|ERROR)' "$trs" || continue
        printf '\n=== %s\n' "${trs%.trs}.log" >&2
        tail -n 300 "${trs%.trs}.log" >&2 || true
    done < <(find "$1" -name '*.trs' 2>/dev/null | sort)
}

# The realistic test image (Debian bookworm minbase through debootstrap, the
# only network use: Debian's archive) is built once, as root, and every
# build's tests/cli/test-image-debian.sh imports and stages that layout.  It
# lives outside the tree, readable by the unprivileged user of step 2.
if [ "$(id -u)" = 0 ]; then
    image_dir=$(mktemp -d /var/tmp/berth-ci-images.XXXXXX)
    chmod 0755 "$image_dir"
    trap 'rm -rf "$image_dir"' EXIT
    step "0/5 build the Debian test image (debootstrap; cached in tests/image/cache)"
    tests/image/build-debian-image.sh "$image_dir/debian" "$top/tests/image/cache"
    chmod -R a+rX "$image_dir"
    export BERTH_DEBIAN_LAYOUT=$image_dir/debian
fi

step "1/5 build, make check, make distcheck"
./autogen.sh
./configure --enable-werror
make -j"$jobs"
make -j"$jobs" check || {
    show_failures tests
    exit 1
}
# Tests that need root (the Debian image, real runsc and crun, the
# quickstart) or a tool (groff for the man pages) may skip elsewhere, never
# here: these must have passed, and no suite may have skipped.
if [ "$(id -u)" = 0 ]; then
    no_skips . tests/cli/test-berthd-crash
    for t in tests/cli/test-image-debian tests/cli/test-bundle-runtimes tests/cli/test-runtime-oci tests/cli/test-runtime-oci-disk tests/cli/test-qualify \
        tests/unit/test-runtime-oci tests/cli/test-quickstart tests/build/test-manpages tests/build/test-layers \
        tests/cli/test-containment-systemd tests/cli/test-berthd-fence tests/cli/test-berthd-contained-oci \
        tests/cli/test-berthd-contained-fallback tests/cli/test-workers; do
        grep -qx ':test-result: PASS' "$t.trs" || {
            echo "$t did not pass" >&2
            cat "$t.log" >&2 || true
            exit 1
        }
    done
fi
# make install DESTDIR=...: every file in its standard place, nothing else.
rm -rf ci-destdir
make install DESTDIR="$top/ci-destdir" >/dev/null
tests/build/check-install.sh "$top/ci-destdir" /usr/local
rm -rf ci-destdir
make -j"$jobs" distcheck || {
    for d in berth-*/_build; do show_failures "$d"; done
    exit 1
}
tarball=$(ls -t berth-*.tar.xz | head -n1)
[ -n "$tarball" ] || { echo "no dist tarball was produced" >&2; exit 1; }
name=${tarball%.tar.xz}
# A packager's build without Check: --disable-tests builds and installs.
tests/build/test-without-check.sh "$tarball"

rm -rf ci-build
mkdir -p ci-build

if [ "$(id -u)" = 0 ]; then
    step "2/5 make distcheck as an unprivileged user"
    user=berth-ci
    created=
    if ! id "$user" >/dev/null 2>&1; then
        useradd --system --create-home --shell /bin/bash "$user"
        created=1
    fi
    home=$(getent passwd "$user" | cut -d: -f6)
    rm -rf "$home/distcheck"
    install -d -o "$user" -m 0755 "$home/distcheck"
    install -o "$user" -m 0644 "$tarball" "$home/distcheck/"
    su -s /bin/bash "$user" -c "set -e; umask 022; export BERTH_DEBIAN_LAYOUT='${BERTH_DEBIAN_LAYOUT:-}'; \
        export BERTH_REQUIRE_TOOLS=1; \
        cd '$home/distcheck'; tar -xJf '$tarball'; cd '$name'; \
        ./configure --enable-werror; make -j$jobs distcheck" || {
        show_failures "$home/distcheck"
        exit 1
    }
    rm -rf "$home/distcheck"
    [ -z "$created" ] || userdel --remove "$user" 2>/dev/null || true
else
    step "2/5 skipped: step 1 already ran make distcheck as an unprivileged user ($(id -un))"
fi

step "3/5 AddressSanitizer + UndefinedBehaviorSanitizer build, make check"
tar -xJf "$tarball" -C ci-build
mv "ci-build/$name" ci-build/asan
(cd ci-build/asan && ./configure --enable-werror --enable-sanitizers --enable-fault-injection &&
    make -j"$jobs" && make -j"$jobs" check) || {
    cat ci-build/asan/test-suite.log 2>/dev/null || true
    exit 1
}
# The crash tests need fault injection, which only this build has: they must
# have run here, not been skipped (and as root, nothing may be).
[ "$(id -u)" != 0 ] || no_skips ci-build/asan
grep -qx ':test-result: PASS' ci-build/asan/tests/cli/test-berthd-crash.trs || {
    echo "the berthd crash tests did not pass in the fault-injection build" >&2
    cat ci-build/asan/tests/cli/test-berthd-crash.log >&2 || true
    exit 1
}
# So must the fault-injection cases of these suites, which say so when they ran.
for t in test-berthd-jobio test-berthd-events; do
    grep -qx ':test-result: PASS' "ci-build/asan/tests/cli/$t.trs" &&
        grep -q '^# fault injection ran: ' "ci-build/asan/tests/cli/$t.log" || {
        echo "the fault-injection case of $t did not run and pass in the fault-injection build" >&2
        cat "ci-build/asan/tests/cli/$t.log" >&2 || true
        exit 1
    }
done

step "4/5 libFuzzer targets, ${FUZZ_SECONDS:-60} s each"
tar -xJf "$tarball" -C ci-build
mv "ci-build/$name" ci-build/fuzz
(cd ci-build/fuzz && CC=clang ./configure --enable-werror --enable-fuzzing && make -j"$jobs" fuzz)

if [ "$(id -u)" = 0 ]; then
    step "5/5 the README quickstart, twice, from the dist tarball"
    tar -xJf "$tarball" -C ci-build
    mv "ci-build/$name" ci-build/quickstart
    # A free port on 127.0.0.1 (nothing accepts a connection there).
    port=18443
    while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
        port=$((port + 1))
    done
    # Prefix and work directory in a fresh root-only directory: the
    # quickstart requires every directory above its work directory to be
    # root's, which the checkout's location need not be.
    qs_root=$(mktemp -d /var/tmp/berth-ci-quickstart.XXXXXX)
    for run in 1 2; do
        ci-build/quickstart/quickstart --prefix "$qs_root/prefix" --workdir "$qs_root/work" --port "$port" \
            --jobs "$jobs" | tee "ci-build/quickstart-$run.out"
        # The job ran in gVisor (its kernel says 4.4.0), and all verified.
        grep -q '| kernel:  Linux 4\.4\.0 ' "ci-build/quickstart-$run.out" || {
            echo "quickstart run $run: the job did not report gVisor's kernel" >&2
            exit 1
        }
        grep -q '^quickstart: done in .*everything verified' "ci-build/quickstart-$run.out" || {
            echo "quickstart run $run did not finish" >&2
            exit 1
        }
    done
    rm -rf "$qs_root"
else
    step "5/5 skipped: the quickstart needs root"
fi

step "all tests passed"
