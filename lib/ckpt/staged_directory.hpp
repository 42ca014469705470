#pragma once
// A directory written whole beside its place, then swapped in: nothing in DIR changes until every
// file of the new one is written; then DIR is replaced at once (renameat2's RENAME_EXCHANGE), with
// the old files the new one does not write carried over when the caller keeps them. A failed or
// interrupted write leaves DIR as it was and removes what it staged. Where the file system cannot
// exchange two directories, or the old DIR holds something that cannot be carried (a
// subdirectory), the new files are renamed into DIR one by one, the last written last.
#include <functional>
#include <string>

namespace zt {

class StagedDirectory {
public:
  // Makes DIR's parent if needed and a fresh staging directory beside DIR. Errors name DIR.
  explicit StagedDirectory(std::string dir);
  ~StagedDirectory();  // removes the staging directory unless installed
  StagedDirectory(const StagedDirectory&) = delete;
  StagedDirectory& operator=(const StagedDirectory&) = delete;

  const std::string& dir() const { return dir_; }
  const std::string& staging() const { return staging_; }  // where the new files are written
  // Puts the staged files in DIR. keep(name): whether an entry of the old DIR that the new one does
  // not hold stays. `last`: the staged file renamed last where files move one by one.
  void install(const std::function<bool(const std::string&)>& keep, const std::string& last);

private:
  bool exchange_with_old(const std::function<bool(const std::string&)>& keep);
  void move_files_in(const std::function<bool(const std::string&)>& keep, const std::string& last);

  std::string dir_, staging_;
  bool installed_ = false;
};

}  // namespace zt
