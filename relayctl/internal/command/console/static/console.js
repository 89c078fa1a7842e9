// The console works without JavaScript; this only adds "select all".
document.addEventListener("DOMContentLoaded", function () {
  var all = document.getElementById("pick-all");
  if (!all) return;
  all.addEventListener("change", function () {
    document.querySelectorAll("input.pick").forEach(function (b) { b.checked = all.checked; });
  });
});
