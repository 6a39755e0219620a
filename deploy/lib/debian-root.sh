# Sourced (bash) by the scripts that make Debian roots with mmdebstrap from
# this machine's own package sources: deploy/image/build.sh,
# tests/fresh-machine.sh and tests/image.sh. Defines:
#   gf_apt_sources [FILE]  prints FILE if given, else the machine's Debian
#                          sources file (deb822 debian.sources, the one-line
#                          sources.list, or the file mmdebstrap writes into a
#                          root it made); status 1 when there is none
#   gf_apt_opts            fills the array GF_APTOPTS with an --aptopt for
#                          each apt.conf.d file that decides how apt reaches
#                          its mirrors (proxies, a snapshot's Valid-Until)
#   gf_suite               prints this machine's release codename (bookworm)
#   gf_project_version DIR prints the version in DIR/CMakeLists.txt's
#                          project() line (empty when there is none)
#   gf_umount_under DIR    unmounts every mount below DIR, deepest first
#                          (lazily where busy), what a root's bind mounts or
#                          a failed hook left behind
#   GF_DPKG_SLIM           --dpkgopt arguments that leave out documentation,
#                          man and info pages and locales, keeping copyright
#                          files (what Debian's `slim` images leave out)

gf_apt_sources() {
  local f
  if [ -n "${1:-}" ]; then
    [ -s "$1" ] && { echo "$1"; return 0; }
    return 1
  fi
  for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list \
           /etc/apt/sources.list.d/*debian*.sources; do
    if [ -s "$f" ] && grep -qE '^[[:space:]]*(URIs:|deb )' "$f"; then
      echo "$f"
      return 0
    fi
  done
  return 1
}

gf_apt_opts() {
  local f
  GF_APTOPTS=()
  for f in /etc/apt/apt.conf.d/*; do
    [ -f "$f" ] && grep -qE '^[[:space:]]*Acquire' "$f" && GF_APTOPTS+=("--aptopt=$f")
  done
  return 0
}

gf_suite() {
  (. /etc/os-release && echo "${VERSION_CODENAME:?}")
}

gf_project_version() {
  sed -n 's/^project(ganflow VERSION \([0-9.]*\).*/\1/p' "$1/CMakeLists.txt"
}

gf_umount_under() {
  local m
  awk -v w="$1" 'index($2, w "/") == 1 { print $2 }' /proc/mounts | sort -r |
    while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" || true; done
}

# shellcheck disable=SC2034 # used by the scripts that source this file
GF_DPKG_SLIM=(
  --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
)
